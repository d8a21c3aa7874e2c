import { describe, expect, it } from '@jest/globals';
import { proxyEvent } from '../../../local/http-adapter.js';

describe('the local adapter’s API Gateway events', () => {
  it('keeps query parameters named like prototype members as plain parameters', () => {
    const event = proxyEvent({
      method: 'GET',
      url: '/t/c?__proto__=1&t=a&t=b&constructor=2',
      headers: { host: 'localhost' },
      body: Buffer.alloc(0),
      requestId: 'r',
      resource: '/t/c',
    });
    expect(Object.getPrototypeOf(event.multiValueQueryStringParameters)).toBe(Object.prototype);
    expect(Object.hasOwn(event.multiValueQueryStringParameters ?? {}, '__proto__')).toBe(true);
    expect(event.multiValueQueryStringParameters?.t).toEqual(['a', 'b']);
    expect(event.multiValueQueryStringParameters?.constructor).toEqual(['2']);
    expect(event.queryStringParameters?.t).toBe('b');
    expect(Object.hasOwn(event.queryStringParameters ?? {}, '__proto__')).toBe(true);
  });
});
