// The webhook receivers' layer: `POST`/`PUT /hooks/{triggerId}/{secret}` (deliverWebhook and
// deliverWebhookPut in openapi.yaml) and an app's signed events at `POST /events/{receiverId}`
// (deliverAppEvent). No bearer token (the URL's secret, or the app's signature, is the credential)
// and a body of any media type, read as bytes up to 64 KiB before anything else is done; the
// services decide the rest. The access log masks the webhook URL's secret (log.ts).
import type express from 'express';
import type { Logger } from '../log';
import type { ServiceContext } from '../services/context';
import { deliverAppEvent } from '../services/app-event-deliveries';
import { verifyChannelReceiver } from '../services/channel-deliveries';
import { deliverWebhook } from '../services/webhook-deliveries';
import { refusedTextIn } from '../domain/json-limits';
import { ApiError } from '../errors';
import { readBodyBytes } from './body';
import type { Operations } from './openapi';
import { inServerSpan } from './tracing';
import { identify, logRequest, replyWithError, sendEmpty, sendJson, sendText } from './replies';

const HOOKS_ROOT = '/hooks/';

interface Reply {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}
const EVENTS_ROOT = '/events/';

export function webhookRequests(operations: Operations, ctx: ServiceContext, logger: Logger): express.RequestHandler {
  return (req, res, next) => {
    const url = req.originalUrl;
    const events = url.startsWith(EVENTS_ROOT);
    if (!events && !url.startsWith(HOOKS_ROOT)) return next();
    identify(req, res);
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const done = () => logRequest(logger, req, res, ctx.metrics, 'unmatched');
    const match = operations.match(req.method, path);
    // A U+0000 in the URL names no trigger (and PostgreSQL's text could not be asked about it).
    if (!match || ('params' in match && refusedTextIn(match.params, 'path'))) {
      replyWithError(new ApiError(404, events ? 'no connection receives events at this URL' : 'no webhook at this URL'), req, res, logger);
      return done();
    }
    if (!('operation' in match)) {
      res.setHeader('Allow', match.allowed.join(', '));
      if (req.method === 'OPTIONS') {
        sendEmpty(res, 204, undefined);
        return done();
      }
      replyWithError(new ApiError(405, `method ${req.method} is not allowed on a webhook URL; allowed: ${match.allowed.join(', ')}`), req, res, logger);
      return done();
    }
    req.matched = match;
    if (events && (req.method === 'GET' || req.method === 'HEAD')) {
      // Meta's subscription check of a WhatsApp connection's URL: the challenge, as text.
      const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
      const asked = {
        mode: query.get('hub.mode') ?? undefined,
        token: query.get('hub.verify_token') ?? undefined,
        challenge: query.get('hub.challenge') ?? undefined,
      };
      inServerSpan(req, res, match.operation.operationId as string, match.operation.path, () => {
        verifyChannelReceiver(ctx, match.params.receiverId as string, asked)
          .then((challenge) => sendText(res, 200, challenge))
          .catch((err: unknown) => replyWithError(err, req, res, logger))
          .finally(done);
      });
      return;
    }
    const reply = async (body: Buffer): Promise<Reply> => {
      if (events) return { status: 200, body: await deliverAppEvent(ctx, { receiverId: match.params.receiverId as string, headers: req.headers, body }) };
      const accepted = await deliverWebhook(ctx, {
        triggerId: match.params.triggerId as string,
        secret: match.params.secret as string,
        headers: req.headers,
        query: queryAt < 0 ? '' : url.slice(queryAt + 1),
        body,
      });
      // Where the run can be followed, by a member of the workspace (the URL's secret reads nothing).
      const location = accepted.runId ? { Location: `/api/build/runs/${accepted.runId}` } : undefined;
      return { status: 202, headers: location, body: { data: { run_id: accepted.runId, status: accepted.status } } };
    };
    inServerSpan(req, res, match.operation.operationId as string, match.operation.path, () => {
      // A forwarded mail may be as large as mail over SMTP; everything else an app sends is at most 64 KiB.
      const mail = events && (req.headers['content-type'] ?? '').toLowerCase().startsWith('message/rfc822');
      readBodyBytes(req, mail ? ctx.channels.maxBytes : undefined)
        .then(reply)
        .then((r) => sendJson(res, r.status, r.headers, Buffer.from(JSON.stringify(r.body))))
        .catch((err: unknown) => replyWithError(err, req, res, logger))
        .finally(done);
    });
  };
}
