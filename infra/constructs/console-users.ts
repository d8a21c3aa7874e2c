import { CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  AccountRecovery,
  CfnManagedLoginBranding,
  CfnUserPoolGroup,
  FeaturePlan,
  ManagedLoginVersion,
  Mfa,
  OAuthScope,
  UserPool,
  UserPoolClient,
  UserPoolClientIdentityProvider,
  type IUserPool,
} from 'aws-cdk-lib/aws-cognito';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { PLATFORM_ADMIN_GROUP } from '../../shared/domain/console/console-user.js';
import type { Region } from '../../shared/domain/regions.js';

/** The region's console user pool, as the API stack's console sign-in is built on it. */
export interface ConsoleUserPool {
  userPool: IUserPool;
  /** The user pool as an OpenID Connect issuer: `https://cognito-idp.<region>.amazonaws.com/<id>`. */
  issuer: string;
  /** Cognito's managed login for the pool: `https://<prefix>.auth.<region>.amazoncognito.com`. */
  signInDomain: string;
}

/** What the console's functions are told of its sign-in (docs/console.md). */
export interface ConsoleSignIn {
  /** The user pool as an OpenID Connect issuer. */
  issuer: string;
  /** The console's app client: its ID tokens' audience. */
  clientId: string;
}

/**
 * The people who may sign in to a region's console: an Amazon Cognito user pool (no sign-up;
 * operators add users, docs/console.md), email as the user name, TOTP required, its managed
 * login domain, and the `platform-admin` group. Groups `instance:<id>` are made by the
 * operators as instances need them. Retained with the data: users outlive a stack. The app
 * client is the API stack's (`ConsoleAppClient`): it must name the console's address, which
 * is the API stack's CloudFront distribution, and the console's functions are told its ID.
 */
export class ConsoleUsers extends Construct {
  readonly pool: ConsoleUserPool;

  constructor(scope: Construct, id: string, props: { region: Region }) {
    super(scope, id);
    const pool = new UserPool(this, 'pool', {
      userPoolName: `cdp-${props.region}-console`,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      featurePlan: FeaturePlan.ESSENTIALS,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    new CfnUserPoolGroup(this, 'platform-admin', {
      userPoolId: pool.userPoolId,
      groupName: PLATFORM_ADMIN_GROUP,
      description: 'Sees and manages every instance of the region',
    });
    // A prefix of the account and region: unique within the AWS region, as Cognito requires.
    const domain = pool.addDomain('sign-in', {
      cognitoDomain: { domainPrefix: `cdp-${props.region}-${Stack.of(this).account}` },
      managedLoginVersion: ManagedLoginVersion.NEWER_MANAGED_LOGIN,
    });
    NagSuppressions.addResourceSuppressions(pool, [
      {
        id: 'AwsSolutions-COG3',
        reason:
          'Threat protection (the Plus plan) is a cost the operator chooses; TOTP is required of every user',
      },
      {
        id: 'AwsSolutions-COG8',
        reason:
          'The Plus plan is a cost the operator chooses; TOTP is required of every user and there is no sign-up',
      },
    ]);
    new CfnOutput(this, 'ConsoleUserPoolId', {
      description: "The console's user pool: add its users and groups there (docs/console.md)",
      value: pool.userPoolId,
    });
    new CfnOutput(this, 'ConsoleSignInDomain', {
      description: "The console's sign-in (Cognito managed login)",
      value: domain.baseUrl(),
    });
    this.pool = {
      userPool: pool,
      issuer: `https://cognito-idp.${Stack.of(this).region}.amazonaws.com/${pool.userPoolId}`,
      signInDomain: domain.baseUrl(),
    };
  }
}

/**
 * The console's app client of the region's user pool (`cdp-console`): the authorization code
 * flow with PKCE, no client secret (the console is a page), Cognito's managed login, and
 * people sent back only to the console's own address.
 */
export class ConsoleAppClient extends Construct {
  readonly signIn: ConsoleSignIn;

  constructor(scope: Construct, id: string, props: { pool: ConsoleUserPool; consoleUrl: string }) {
    super(scope, id);
    const client = new UserPoolClient(this, 'client', {
      userPool: props.pool.userPool,
      userPoolClientName: 'cdp-console',
      generateSecret: false,
      preventUserExistenceErrors: true,
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE],
        callbackUrls: [props.consoleUrl],
        logoutUrls: [props.consoleUrl],
      },
      idTokenValidity: Duration.hours(1),
      accessTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.hours(8),
    });
    new CfnManagedLoginBranding(this, 'branding', {
      userPoolId: props.pool.userPool.userPoolId,
      clientId: client.userPoolClientId,
      useCognitoProvidedValues: true,
    });
    this.signIn = { issuer: props.pool.issuer, clientId: client.userPoolClientId };
  }
}
