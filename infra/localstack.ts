import type { Construct } from 'constructs';

/**
 * The one place that decides what a deploy to LocalStack leaves out. Context `localstack`
 * (set only by `npm run deploy:localstack`) leaves out the resource types that LocalStack's
 * free CloudFormation cannot create, each for the reason given; every other resource of the
 * stacks is deployed, and the deploy checks that it is there. Without the context flag
 * nothing is left out.
 */
export const LOCALSTACK_CONTEXT = 'localstack';

export const LEFT_OUT_ON_LOCALSTACK = {
  'AWS::WAFv2::WebACL':
    "no WAFv2 in LocalStack's free edition (the body-limit rule; its association goes with it)",
  'AWS::WAFv2::WebACLAssociation': "no WAFv2 in LocalStack's free edition",
  'AWS::SES::ConfigurationSet':
    "LocalStack's free CloudFormation has no SES configuration set provider (and its SES no SES v2)",
  'AWS::SES::ConfigurationSetEventDestination':
    "LocalStack's free CloudFormation has no SES configuration set provider",
  'AWS::SES::EmailIdentity':
    'the AWS::SES::EmailIdentity provider of LocalStack 4.14.0 is a stub whose create raises NotImplementedError (its DKIM outputs go with it)',
  'AWS::Location::PlaceIndex': "no Amazon Location Service in LocalStack's free edition",
  'AWS::CloudWatch::Dashboard':
    "LocalStack's free CloudFormation has no CloudWatch dashboard provider",
  'AWS::Cognito::UserPool':
    "no Amazon Cognito in LocalStack's free edition (the console's sign-in: the console's API then refuses every request)",
  'AWS::Cognito::UserPoolClient': "no Amazon Cognito in LocalStack's free edition",
  'AWS::Cognito::UserPoolDomain': "no Amazon Cognito in LocalStack's free edition",
  'AWS::Cognito::UserPoolGroup': "no Amazon Cognito in LocalStack's free edition",
  'AWS::Cognito::ManagedLoginBranding': "no Amazon Cognito in LocalStack's free edition",
  'AWS::CloudFront::Distribution':
    "no CloudFront in LocalStack's free edition (the console's pages: the console is left out whole, its bucket and the upload of its pages with it)",
  'AWS::CloudFront::OriginAccessControl': "no CloudFront in LocalStack's free edition",
  'AWS::CloudFront::ResponseHeadersPolicy': "no CloudFront in LocalStack's free edition",
  'AWS::CloudFront::Function': "no CloudFront in LocalStack's free edition",
  'Custom::CDKBucketDeployment':
    "the upload of the console's pages, a Lambda-backed custom resource: LocalStack runs no Lambda without a container runtime",
  'AWS::Lambda::LayerVersion':
    "the AWS CLI layer of the pages' upload, which goes with it (the project's functions use no layer)",
} as const;

export type LeftOutType = keyof typeof LEFT_OUT_ON_LOCALSTACK;

/** Whether this deploy is the LocalStack one (context `localstack=true`). */
export function deployingToLocalstack(scope: Construct): boolean {
  const value = scope.node.tryGetContext(LOCALSTACK_CONTEXT) as unknown;
  return value === true || value === 'true';
}

/** Whether a resource of this type is left out here: only in the LocalStack deploy. */
export function leftOutOnLocalstack(scope: Construct, type: LeftOutType): boolean {
  return deployingToLocalstack(scope) && type in LEFT_OUT_ON_LOCALSTACK;
}
