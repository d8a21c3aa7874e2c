/* global process */
// Five projects: unit (no network), integration (against the local stack that the global
// setup starts), integration-faults (the same against a stack with DynamoDB faults), browser
// (the API reference page in Chromium) and infra (CDK template assertions). With CDP_AWS_ENDPOINT=external (`npm run test:localstack`)
// integration-localstack takes the place of the two integration projects.
const swc = [
  '@swc/jest',
  {
    // Import attributes kept: the OpenAPI document is imported `with { type: 'json' }`.
    jsc: {
      parser: { syntax: 'typescript' },
      target: 'es2022',
      experimental: { keepImportAttributes: true },
    },
    module: { type: 'es6' },
  },
];

const common = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Its ESM build imports JSON without an import attribute, which jest warns about.
    '^libphonenumber-js/min$': '<rootDir>/node_modules/libphonenumber-js/min/index.cjs',
  },
  transform: { '^.+\\.ts$': swc },
  setupFiles: ['<rootDir>/test/setup-env.js'],
  testEnvironment: 'node',
  // LocalStack's virtual environment and library folder (`npm run localstack`).
  modulePathIgnorePatterns: ['<rootDir>/.localstack/'],
};

const integration = {
  ...common,
  displayName: 'integration',
  testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
  globalSetup: '<rootDir>/test/integration/global-setup.ts',
  globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
};

const integrationFaults = {
  // The same suite against a stack whose DynamoDB calls meet conflicts, throttling and
  // stale reads (CDP_FAULTS): the results must not change. Tests of the process, the
  // CLI and the queue pollers, and those that inject faults themselves, run once.
  ...common,
  displayName: 'integration-faults',
  testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
  testPathIgnorePatterns: [
    '/lifecycle\\.test\\.ts$',
    '/admin\\.test\\.ts$',
    '/queue-poller\\.test\\.ts$',
    '/stream-poller\\.test\\.ts$',
    '/fault-injection\\.test\\.ts$',
    '/store-faults\\.test\\.ts$',
    '/audience-evaluation\\.test\\.ts$',
    '/ingest-worker\\.test\\.ts$',
    '/ses-gateway\\.test\\.ts$',
    '/process-faults\\.test\\.ts$',
    // Starts a stack of its own to read its logs; faults add nothing to what it checks.
    '/security\\.test\\.ts$',
    // Refused bodies reach DynamoDB only through the key and rate-limit checks, which the
    // rest of this project exercises under faults; kept to the CI budget.
    '/fuzz\\.test\\.ts$',
    // Also kept to the CI budget (45 min on 2 cores, where this project took ~430 s): files
    // about what is answered, not how writes meet each other. Their writes are the merges,
    // activities and emails the files above run under faults: the reference page, the size
    // edge and the HTTP contract, request shapes of real and typed clients, tenant isolation
    // (a key's reach), location lookups, and the listing searches (reads).
    '/api-reference\\.test\\.ts$',
    '/edge-limits\\.test\\.ts$',
    '/http-contract\\.test\\.ts$',
    '/real-clients\\.test\\.ts$',
    '/typed-client\\.test\\.ts$',
    '/tenant-isolation\\.test\\.ts$',
    '/person-location\\.test\\.ts$',
    '/person-search\\.test\\.ts$',
    // The console's pages in Chromium: what they show, not how writes meet each other.
    '/integration/console/browser[^/]*\\.test\\.ts$',
  ],
  setupFiles: [...common.setupFiles, '<rootDir>/test/integration/faults-env.js'],
  globalSetup: '<rootDir>/test/integration/global-setup-faults.ts',
  globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
};

const integrationLocalstack = {
  // The same suite with every AWS service at $AWS_ENDPOINT_URL (LocalStack); the APIs and
  // pollers still run here. Left out, because they need the local emulators themselves:
  ...common,
  displayName: 'integration-localstack',
  testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
  testPathIgnorePatterns: [
    // Starts and stops whole local stacks: DynamoDB Local and its data directory, the Java
    // and busy-port checks, the demo keys of an in-memory stack (CDP_EPHEMERAL).
    '/lifecycle\\.test\\.ts$',
    // The local SES gateway itself (raw mail, /messages, /faults) on a fauxqs of its own.
    '/ses-gateway\\.test\\.ts$',
    // Runs DynamoDB Local and fauxqs itself to kill and restart them, and downs the gateway.
    '/process-faults\\.test\\.ts$',
    // Starts a whole local stack of its own (emulators included) to read its logs.
    '/security\\.test\\.ts$',
    // The console's pages in Chromium: the same pages whatever the store (its API runs here).
    '/integration/console/browser[^/]*\\.test\\.ts$',
  ],
  setupFiles: [...common.setupFiles, '<rootDir>/test/integration/localstack-env.js'],
  // Node's, where no test or hook has less time than testTimeout below.
  testEnvironment: '<rootDir>/test/integration/localstack-environment.ts',
  globalSetup: '<rootDir>/test/integration/global-setup-localstack.ts',
  globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
};

const external = process.env.CDP_AWS_ENDPOINT === 'external';

export default {
  // Integration and infra tests start processes and synthesize stacks; unit tests finish in ms.
  // On LocalStack every DynamoDB, SQS and SNS call passes its Python gateway: on 2 busy cores
  // the fuzz file (6,800 requests) took 125-245 s there, against ~30 s on the local emulators.
  // (Jest reads testTimeout from here only: a project's own is ignored.)
  testTimeout: external ? 600000 : 120000,
  // Two files at once on the emulators (2 cores: the suite waits on its stacks' workers much of
  // the time; 16.6 min against 24.5 min one at a time, 2026-11-27), whatever number of cores
  // the machine claims. LocalStack's one gateway is the bottleneck there: one at a time.
  maxWorkers: external ? 1 : 2,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    ...(external ? [integrationLocalstack] : [integration, integrationFaults]),
    // The API reference page in headless Chromium (Debian's package; see .ci/run).
    { ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'] },
    {
      ...common,
      displayName: 'infra',
      testMatch: ['<rootDir>/test/infra/**/*.test.ts'],
      setupFiles: [...common.setupFiles, '<rootDir>/test/infra/setup-env.js'],
    },
  ],
};
