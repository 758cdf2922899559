// Unit tests (pure code), integration tests (the app over HTTP on a temporary SQLite file) and the
// store contract suite (both adapters).
// Type checking is `npm run typecheck`'s job; ts-jest only transpiles here, which keeps runs fast.
const transform = { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] };

module.exports = {
  // TEST_STORE=postgres runs the integration and reliability tests against a throwaway PostgreSQL cluster.
  globalSetup: '<rootDir>/test/global-setup.js',
  globalTeardown: '<rootDir>/test/global-teardown.js',
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  // Many tests start a service, generate RSA keys or wait out a back-off: seconds each on a loaded
  // two-core machine, where jest's 5-second default failed healthy tests.
  testTimeout: 20_000,
  // `npm run test:jest` runs the integration and store suites two at a time (the machines have two
  // cores, and a suite often waits on a timer or a socket), and the unit and reliability suites one
  // at a time: several bound a parser's time (linear-parsing), the event loop's delay or a reply's
  // latency, which a neighbour's load would blur (a 250 ms parse bound took 690 ms beside another
  // worker on Node 24).
  projects: [
    { displayName: 'unit', testEnvironment: 'node', transform, testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
    {
      // Against a real server process (built into dist/): concurrency, crashes, hostile input, token attacks.
      displayName: 'reliability',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/reliability/**/*.test.ts'],
    },
    {
      // The store contract suite: every port method's behaviour, each case on both adapters (SQLite
      // and PostgreSQL: test/store/adapters.ts), with the PostgreSQL-only races as further cases.
      displayName: 'store',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/store/**/*.test.ts'],
    },
  ],
};
