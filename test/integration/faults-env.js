/* global process */
// The integration-faults project talks to the stack whose DynamoDB calls meet faults.
process.env.CDP_TEST_STACK = 'faults';
