/* global process */
// The infra tests synthesize the app a few dozen times. CDK's built-in CloudFormation validation
// (a WebAssembly rule engine run over every template at synth; its findings are warnings in a
// report file these tests never read) took 15-24 % of their CPU. The templates are checked
// by cfn-lint in CI (`npm run lint:cfn`), and `cdk synth` and deploys keep the validation.
process.env.CDK_VALIDATION = 'false';
