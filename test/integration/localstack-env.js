/* global process */
// The integration-localstack project talks to the stack whose AWS services are external.
process.env.CDP_TEST_STACK = 'localstack';
process.env.CDP_AWS_ENDPOINT = 'external';
