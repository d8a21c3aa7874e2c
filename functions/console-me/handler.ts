import { ConsoleMeResponse } from '../../shared/api/console-schemas.js';
import { instancesOf } from '../../shared/domain/console/console-keys.js';
import { consoleHandler } from '../../shared/http/console-handler.js';
import { createConsoleRuntime } from '../../shared/http/console-runtime.js';
import { findRoute } from '../../shared/routes.js';
import { z } from 'zod';

const { http, config, region } = createConsoleRuntime();

/** `GET /console/v1/me`: who signed in, and the instances of this region they may manage. */
export const handler = consoleHandler(
  findRoute('GET /console/v1/me'),
  { ...http, body: z.unknown(), response: ConsoleMeResponse },
  async ({ user }) => ({
    body: {
      subject: user.subject,
      email: user.email ?? null,
      platform_admin: user.platformAdmin,
      instances: await instancesOf(config, user, region),
    },
  }),
);
