// Four projects: unit (no network), integration (against the local stack that the global
// setup starts), integration-faults (the same against a stack with DynamoDB faults) and
// infra (CDK template assertions).
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
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
};

export default {
  // Integration and infra tests start processes and synthesize stacks; unit tests finish in ms.
  testTimeout: 120000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
    {
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
        '/fault-injection\\.test\\.ts$',
        '/store-faults\\.test\\.ts$',
        '/ingest-worker\\.test\\.ts$',
        '/ses-gateway\\.test\\.ts$',
      ],
      setupFiles: [...common.setupFiles, '<rootDir>/test/integration/faults-env.js'],
      globalSetup: '<rootDir>/test/integration/global-setup-faults.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
    {
      ...common,
      displayName: 'infra',
      testMatch: ['<rootDir>/test/infra/**/*.test.ts'],
    },
  ],
};
