// Prints one closing line, `jest: N passed, N failed, N skipped`, that CI and humans can read at a glance.
'use strict';
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numRuntimeErrorTestSuites: broken } = results;
    process.stdout.write(`jest: ${passed} passed, ${failed + broken} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
