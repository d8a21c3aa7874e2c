import { afterEach, describe, expect, it } from '@jest/globals';
import {
  AlreadyExistsException,
  CreateConfigurationSetCommand,
  CreateConfigurationSetEventDestinationCommand,
  CreateEmailIdentityCommand,
  type SESv2Client,
} from '@aws-sdk/client-sesv2';
import { ensureSesSending } from '../../../local/resources.js';
import {
  localAwsEnv,
  readStackSettings,
  regionRoleFrom,
  usesExternalAws,
} from '../../../local/settings.js';

/**
 * `CDP_AWS_ENDPOINT=external` (the stack on LocalStack): which endpoints and credentials the
 * clients get, and the SES setup an external SES needs, run twice.
 */
const saved = { ...process.env };
afterEach(() => {
  for (const name of Object.keys(process.env)) {
    if (!(name in saved)) Reflect.deleteProperty(process.env, name);
  }
  Object.assign(process.env, saved);
});

function settingsWith(env: Record<string, string | undefined>) {
  for (const name of Object.keys(process.env)) {
    if (
      name.startsWith('AWS_') ||
      [
        'CDP_AWS_ENDPOINT',
        'CDP_SKIP_EMULATORS',
        'LOCALSTACK_PORT',
        'CDP_REGIONS',
        'CDP_SPLIT_WORKERS',
      ].includes(name)
    ) {
      Reflect.deleteProperty(process.env, name);
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined) process.env[name] = value;
  }
  return readStackSettings();
}

describe('CDP_AWS_ENDPOINT', () => {
  it('leaves the local emulators in charge when unset', () => {
    const settings = settingsWith({ AWS_ENDPOINT_URL: 'http://localhost:4566' });
    expect(settings.external).toBeUndefined();
    expect(localAwsEnv(settings).AWS_ENDPOINT_URL_DYNAMODB).toBe('http://127.0.0.1:8000');
  });

  it("sends every service to LocalStack's default address when no endpoint is named", () => {
    const env = localAwsEnv(settingsWith({ CDP_AWS_ENDPOINT: 'external' }));
    expect(env).toMatchObject({
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://localhost:4566',
      AWS_ENDPOINT_URL_SQS: 'http://localhost:4566',
      AWS_ENDPOINT_URL_S3: 'http://localhost:4566',
      AWS_ENDPOINT_URL_SNS: 'http://localhost:4566',
      AWS_ENDPOINT_URL_SESV2: 'http://localhost:4566',
    });
  });

  it('takes AWS_ENDPOINT_URL, a service variable over it, and never the real credentials', () => {
    const env = localAwsEnv(
      settingsWith({
        CDP_AWS_ENDPOINT: 'external',
        AWS_ENDPOINT_URL: 'http://stack.test:4566/',
        AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9000',
        AWS_ACCESS_KEY_ID: 'AKIAREALKEY',
        AWS_SECRET_ACCESS_KEY: 'real-secret',
        AWS_REGION: 'eu-west-1',
      }),
    );
    expect(env).toMatchObject({
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9000',
      AWS_ENDPOINT_URL_SQS: 'http://stack.test:4566',
      AWS_ENDPOINT_URL_SESV2: 'http://stack.test:4566',
    });
  });

  it('names what it does not understand', () => {
    expect(() => settingsWith({ CDP_AWS_ENDPOINT: 'localstack' })).toThrow(
      'CDP_AWS_ENDPOINT=localstack is not understood: the one value is "external"',
    );
    expect(() =>
      settingsWith({ CDP_AWS_ENDPOINT: 'external', AWS_ENDPOINT_URL_SQS: 'localhost:4566' }),
    ).toThrow('AWS_ENDPOINT_URL_SQS=localhost:4566 is not a URL (expected http://host:port)');
  });

  it("tells a regional process it runs against the external endpoint (its pollers' pace)", () => {
    expect(usesExternalAws({})).toBe(false);
    expect(usesExternalAws({ CDP_AWS_ENDPOINT: ' ' })).toBe(false);
    expect(usesExternalAws({ CDP_AWS_ENDPOINT: ' external ' })).toBe(true);
    expect(() => usesExternalAws({ CDP_AWS_ENDPOINT: 'moto' })).toThrow(
      'CDP_AWS_ENDPOINT=moto is not understood: the one value is "external"',
    );
  });
});

describe('ensureSesSending', () => {
  function fakeSes(fail: (command: unknown) => Error | undefined) {
    const sent: unknown[] = [];
    const client = {
      send: (command: unknown) => {
        sent.push(command);
        const error = fail(command);
        return error ? Promise.reject(error) : Promise.resolve({});
      },
    } as unknown as SESv2Client;
    return { client, sent };
  }

  it('verifies the domains and wires the configuration set to the topic', async () => {
    const { client, sent } = fakeSes(() => undefined);
    const topic = 'arn:aws:sns:us-east-1:000000000000:cdp-au-ses-events';
    await ensureSesSending(client, 'au', topic, ['mail.a.test', 'mail.cdp.local']);
    expect(sent.map((command) => (command as { input: unknown }).input)).toEqual([
      { EmailIdentity: 'mail.a.test' },
      { EmailIdentity: 'mail.cdp.local' },
      { ConfigurationSetName: 'cdp-au' },
      {
        ConfigurationSetName: 'cdp-au',
        EventDestinationName: 'cdp-au-ses-events',
        EventDestination: expect.objectContaining({
          Enabled: true,
          MatchingEventTypes: expect.arrayContaining(['SEND', 'DELIVERY', 'BOUNCE', 'COMPLAINT']),
          SnsDestination: { TopicArn: topic },
        }) as unknown,
      },
    ]);
    expect(sent[0]).toBeInstanceOf(CreateEmailIdentityCommand);
    expect(sent[2]).toBeInstanceOf(CreateConfigurationSetCommand);
    expect(sent[3]).toBeInstanceOf(CreateConfigurationSetEventDestinationCommand);
  });

  it('finds everything made by an earlier run, and stops on any other refusal', async () => {
    const exists = () => new AlreadyExistsException({ message: 'exists', $metadata: {} });
    const again = fakeSes(exists);
    await expect(ensureSesSending(again.client, 'default', 'arn:t', ['m.test'])).resolves.toBe(
      undefined,
    );
    expect(again.sent).toHaveLength(3);
    const refused = fakeSes((command) =>
      command instanceof CreateConfigurationSetCommand ? new Error('NotImplemented') : undefined,
    );
    await expect(ensureSesSending(refused.client, 'default', 'arn:t', ['m.test'])).rejects.toThrow(
      'NotImplemented',
    );
  });
});

describe('CDP_SKIP_EMULATORS', () => {
  it('names the emulators the stack leaves to someone else, none when unset', () => {
    expect([...settingsWith({}).skipEmulators]).toEqual([]);
    expect([...settingsWith({ CDP_SKIP_EMULATORS: 'dynamodb, sqs' }).skipEmulators]).toEqual([
      'dynamodb',
      'sqs',
    ]);
    expect([...settingsWith({ CDP_SKIP_EMULATORS: 'sqs' }).skipEmulators]).toEqual(['sqs']);
  });

  it('refuses an emulator it does not know, naming it', () => {
    expect(() => settingsWith({ CDP_SKIP_EMULATORS: 'dynamodb,ses' })).toThrow(
      'CDP_SKIP_EMULATORS=dynamodb,ses: ses is not one of dynamodb, sqs',
    );
  });
});

describe('CDP_REGIONS and CDP_SPLIT_WORKERS', () => {
  it('runs every region, the API and the workers of each in one process, unless told', () => {
    const settings = settingsWith({});
    expect(settings.regions).toEqual(['default', 'au', 'eu']);
    expect(settings.splitWorkers).toBe(false);
  });

  it("runs the regions named, in the stack's order, and splits the workers on 1", () => {
    const settings = settingsWith({ CDP_REGIONS: 'eu, default', CDP_SPLIT_WORKERS: '1' });
    expect(settings.regions).toEqual(['default', 'eu']);
    expect(settings.splitWorkers).toBe(true);
  });

  it('gives a regional process its role (all by default) and refuses an unknown one', () => {
    expect(regionRoleFrom(undefined)).toBe('all');
    expect(regionRoleFrom('stream-workers')).toBe('stream-workers');
    expect(() => regionRoleFrom('workers')).toThrow(
      'CDP_REGION_ROLE=workers is not one of all, api, queue-workers, stream-workers',
    );
  });

  it('refuses a region it does not know, naming it', () => {
    expect(() => settingsWith({ CDP_REGIONS: 'default,us' })).toThrow(
      'CDP_REGIONS=default,us: us is not one of default, au, eu',
    );
  });
});
