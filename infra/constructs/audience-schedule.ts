import { Duration } from 'aws-cdk-lib';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleTargetInput,
} from 'aws-cdk-lib/aws-scheduler';
import { SqsSendMessage } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { Region } from '../../shared/domain/regions.js';

/** When the daily re-evaluation of time-relative audience conditions runs (UTC). */
export const AUDIENCE_RECHECK_HOUR_UTC = 3;

/**
 * The daily re-evaluation of audiences whose filters depend on time (docs/audiences.md):
 * an EventBridge Scheduler schedule that puts one `recheck-all` job on the region's audiences
 * queue, its day the schedule's own time (a late or retried delivery still names its day).
 * Its role may only send to that queue.
 */
export class AudienceRecheckSchedule extends Construct {
  readonly schedule: Schedule;

  constructor(scope: Construct, id: string, props: { region: Region; queue: IQueue }) {
    super(scope, id);
    this.schedule = new Schedule(this, 'schedule', {
      scheduleName: `cdp-${props.region}-audiences-daily`,
      description: 'Re-evaluates the people whose audience memberships can change with time',
      schedule: ScheduleExpression.cron({
        minute: '0',
        hour: String(AUDIENCE_RECHECK_HOUR_UTC),
      }),
      target: new SqsSendMessage(props.queue, {
        input: ScheduleTargetInput.fromObject({
          kind: 'recheck-all',
          day: ContextAttribute.scheduledTime,
        }),
        retryAttempts: 10,
        maxEventAge: Duration.hours(6),
      }),
    });
  }
}
