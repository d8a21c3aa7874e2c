import { describe, expect, it } from '@jest/globals';
import { DYNAMODB_JAVA_OPTIONS, dynamoDbJavaOptions } from '../../../local/dynamodb-local.js';

/** DynamoDB Local's JVM: the quick compiler only, unless the caller says otherwise. */
describe('DynamoDB Local JVM options', () => {
  it('runs the quick compiler alone by default, after the caller’s own options', () => {
    expect(DYNAMODB_JAVA_OPTIONS).toBe('-XX:TieredStopAtLevel=1');
    expect(dynamoDbJavaOptions({})).toBe('-XX:TieredStopAtLevel=1');
    expect(dynamoDbJavaOptions({ JDK_JAVA_OPTIONS: '-Xmx512m' })).toBe(
      '-Xmx512m -XX:TieredStopAtLevel=1',
    );
  });

  it('takes CDP_DYNAMODB_JAVA_OPTIONS instead, and nothing when it is empty', () => {
    expect(dynamoDbJavaOptions({ CDP_DYNAMODB_JAVA_OPTIONS: '-XX:+UseSerialGC' })).toBe(
      '-XX:+UseSerialGC',
    );
    expect(dynamoDbJavaOptions({ CDP_DYNAMODB_JAVA_OPTIONS: '' })).toBeUndefined();
    expect(
      dynamoDbJavaOptions({ CDP_DYNAMODB_JAVA_OPTIONS: ' ', JDK_JAVA_OPTIONS: '-Xmx1g' }),
    ).toBe('-Xmx1g');
  });
});
