import { CfnOutput, Stack } from 'aws-cdk-lib';
import { AccountRootPrincipal, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import {
  ConfigurationSet,
  EmailIdentity,
  EmailSendingEvent,
  EventDestination,
  Identity,
} from 'aws-cdk-lib/aws-ses';
import { Subscription, SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';
import { sesConfigurationSet } from '../../shared/resources.js';
import { leftOutOnLocalstack } from '../localstack.js';

export interface EmailSendingProps {
  region: Region;
  /** Verified once per deployment; sends for addresses on no instance's sending domain. */
  fallbackDomain: string;
  /** The `sending_domains` of the region's instances (from the configuration file). */
  sendingDomains: readonly string[];
  /** Where SES events go (the email-events worker's queue). */
  eventsQueue: IQueue;
}

/** What the functions of the region receive about sending. */
export interface EmailSendingData {
  configurationSet: string;
  fallbackDomain: string;
  /** Every verified domain: the fallback domain and the instances' sending domains. */
  domains: readonly string[];
}

/**
 * SES for one region: the configuration set every email is sent with, whose event destination
 * publishes sends, deliveries, bounces, complaints and rejections to an encrypted SNS topic
 * that feeds the email-events queue (the envelope is kept: the worker reads SNS's), and one
 * domain identity (Easy DKIM) per sending domain. The DKIM records to publish are outputs.
 */
export class EmailSending extends Construct {
  readonly data: EmailSendingData;

  constructor(scope: Construct, id: string, props: EmailSendingProps) {
    super(scope, id);
    const stack = Stack.of(this);

    // SES publishes to the topic, so it must be able to use the topic's key.
    const key = new Key(this, 'events-key', {
      description: `SES events of cdp-${props.region}`,
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('ses.amazonaws.com')],
        actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    key.grant(new AccountRootPrincipal(), 'kms:DescribeKey');
    const topic = new Topic(this, 'events', {
      topicName: `cdp-${props.region}-ses-events`,
      masterKey: key,
      enforceSSL: true,
    });
    topic.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('ses.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
    );
    // Named here rather than by `SqsSubscription` after the topic's path from the app, which a
    // pipeline stage lengthens (a direct and a pipeline deploy must build the same resources).
    new Subscription(this, 'events-to-queue', {
      topic,
      protocol: SubscriptionProtocol.SQS,
      endpoint: props.eventsQueue.queueArn,
      rawMessageDelivery: false,
    });
    props.eventsQueue.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('sns.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [props.eventsQueue.queueArn],
        conditions: { ArnEquals: { 'aws:SourceArn': topic.topicArn } },
      }),
    );

    const configurationSetName = sesConfigurationSet(props.region);
    let configurationSet: ConfigurationSet | undefined;
    if (!leftOutOnLocalstack(this, 'AWS::SES::ConfigurationSet')) {
      configurationSet = new ConfigurationSet(this, 'configuration-set', {
        configurationSetName,
        // Bounce and complaint rates per set, for the alarms.
        reputationMetrics: true,
        sendingEnabled: true,
      });
      configurationSet.addEventDestination('events', {
        destination: EventDestination.snsTopic(topic),
        events: [
          EmailSendingEvent.SEND,
          EmailSendingEvent.DELIVERY,
          EmailSendingEvent.BOUNCE,
          EmailSendingEvent.COMPLAINT,
          EmailSendingEvent.REJECT,
        ],
      });
    }

    // SES identities are case-insensitive: one per domain, however the files spell it.
    const domains = [
      ...new Set([props.fallbackDomain, ...props.sendingDomains].map((d) => d.toLowerCase())),
    ].sort();
    const identities = leftOutOnLocalstack(this, 'AWS::SES::EmailIdentity') ? [] : domains;
    identities.forEach((domain) => {
      const identity = new EmailIdentity(this, `identity-${domain}`, {
        identity: Identity.domain(domain),
        ...(configurationSet ? { configurationSet } : {}),
      });
      identity.dkimRecords.forEach((record, index) => {
        // Output IDs are alphanumeric: the domain's position keeps `a-b.com` and `ab.com` apart.
        const id = `dkim${domain.replace(/[^A-Za-z0-9]/g, '')}${domains.indexOf(domain)}x${index + 1}`;
        new CfnOutput(this, id, {
          description: `DKIM CNAME record ${index + 1} of ${domain}, to publish in its DNS zone`,
          value: stack.toJsonString({ type: 'CNAME', name: record.name, value: record.value }),
        });
      });
    });

    this.data = {
      // The set's own name (a reference) where it is created: the API stack then depends on it.
      configurationSet: configurationSet?.configurationSetName ?? configurationSetName,
      fallbackDomain: props.fallbackDomain,
      domains,
    };
  }
}
