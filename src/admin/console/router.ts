import express, { Router, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from '../../logging/logger';
import { ServiceError } from '../../model/errors';
import type { BlockedKeys } from '../../operations/blocked-keys';
import type { DeadLetters } from '../../operations/dead-letters';
import { isDeliveryState } from '../../operations/delivery-state';
import { eventDetail } from '../../operations/event-detail';
import { createEventSearch, type SearchQuery } from '../../operations/event-search';
import type { Recovery } from '../../operations/recovery';
import { targetOverviews } from '../../operations/target-overview';
import { parseOperatorTime } from '../../operations/time';
import type { Pipeline } from '../../pipeline/pipeline';
import { actorOf } from '../audit';
import { principalOf, roleOf } from '../auth';
import { ACTIONS, actionParams, confirmPage, doneMessage } from './actions';
import { CONSOLE_CSS, CONSOLE_JS } from './assets';
import { createCsrf, type Csrf } from './csrf';
import { eventPage } from './event-page';
import { expectationsPage } from './expectations-page';
import { isExpectationState } from '../../reconciliation/expectation';
import type { Expectations } from '../../reconciliation/expectations';
import { archivedEventPage } from './archived-page';
import { findEvent } from '../../operations/event-lookup';
import { EVIDENCE_FILES } from '../../archive/export';
import type { ArchiveHistory } from '../../archive/history';
import { CONSOLE_PATH, html, layout, type Html, type PageContext } from './html';
import { searchPage, type SearchForm } from './search-page';
import { targetsPage } from './targets-page';

export { CONSOLE_PATH };

export interface ConsoleDeps {
  pipeline: Pipeline;
  mask: (p: unknown) => unknown;
  recovery: Recovery;
  deadLetters: DeadLetters;
  blockedKeys: BlockedKeys;
  /** Expected notifications: listed, and shown beside the events of a request_id. */
  expectations: Expectations;
  /** The platform environments configured, for the search filter. */
  environments: readonly string[];
  logger: Logger;
  csrf?: Csrf;
  /** The evidence archive's history: events Redis has forgotten, and their evidence files. */
  archive?: ArchiveHistory;
}

/**
 * Only our own origin: the console's style sheet and script are served here, forms post here, and
 * nothing else loads (no inline script or style, no other site's fonts).
 */
const csp = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      objectSrc: ["'none'"],
    },
  },
  strictTransportSecurity: false,
  // `no-referrer` (helmet's default) makes the browser send `Origin: null` with a form, which the
  // Origin check must refuse; `same-origin` sends our own origin, and nothing to other sites.
  referrerPolicy: { policy: 'same-origin' },
});

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The console: server-rendered pages for finding events and acting on them, under CONSOLE_PATH. */
export function consoleRouter(deps: ConsoleDeps): Router {
  const router = Router();
  const csrf = deps.csrf ?? createCsrf();
  const search = createEventSearch(deps.pipeline, deps.archive);
  const context = (req: Request): PageContext => ({
    principal: principalOf(req),
    role: roleOf(req),
    csrf: csrf.issue(principalOf(req)),
  });
  const send = (
    req: Request,
    res: Response,
    title: string,
    current: 'events' | 'targets' | 'expectations' | '',
    main: Html,
    opts: { refresh?: boolean; status?: number } = {},
  ) => {
    res
      .status(opts.status ?? 200)
      .type('html')
      .setHeader('cache-control', 'no-store');
    res.send(layout(context(req), title, current, main, opts));
  };
  const refuse = (req: Request, res: Response, status: number, title: string, message: string) =>
    send(
      req,
      res,
      title,
      '',
      html`<h1>${title}</h1>
        <p class="error" role="alert">${message}</p>
        <p><a href="${CONSOLE_PATH}/events">Back to the events</a></p>`,
      { status },
    );

  router.use(csp);
  router.get(
    '/assets/console.css',
    (_req, res) => void res.type('text/css').setHeader('cache-control', 'max-age=300').send(CONSOLE_CSS),
  );
  router.get(
    '/assets/console.js',
    (_req, res) => void res.type('text/javascript').setHeader('cache-control', 'max-age=300').send(CONSOLE_JS),
  );
  router.get('/', (_req, res) => res.redirect(303, `${CONSOLE_PATH}/events`));

  router.get('/events', async (req, res) => {
    const form: SearchForm = {
      q: text(req.query.q),
      type: text(req.query.type),
      environment: text(req.query.environment),
      target: text(req.query.target),
      state: text(req.query.state),
      from: text(req.query.from),
      to: text(req.query.to),
    };
    const problems: string[] = [];
    const at = (name: 'from' | 'to') => {
      if (!form[name]) return undefined;
      const ms = parseOperatorTime(form[name]);
      if (Number.isNaN(ms))
        problems.push(`${name}: not a time (ISO 8601, e.g. 2026-11-23T16:00:00Z, or epoch milliseconds)`);
      return ms;
    };
    const targets = deps.pipeline.targets().map((t) => t.name);
    if (form.state && !isDeliveryState(form.state)) problems.push(`state: one of the listed delivery states`);
    if (form.target && !targets.includes(form.target)) problems.push(`target: no target named ${form.target}`);
    const q: SearchQuery = {
      q: form.q || undefined,
      eventType: form.type || undefined,
      environment: form.environment || undefined,
      target: form.target || undefined,
      state: isDeliveryState(form.state) ? form.state : undefined,
      from: at('from'),
      to: at('to'),
      cursor: text(req.query.cursor) || undefined,
    };
    const page = problems.length ? undefined : await search.search(q);
    const expected = form.q.trim() ? await deps.expectations.ofRequest(form.q.trim()) : [];
    const main = searchPage(form, page, problems.length ? problems.join('; ') : undefined, {
      environments: deps.environments,
      targets,
      canAct: roleOf(req) === 'operator',
      q,
      expectations: expected,
    });
    send(req, res, form.q ? `Events for ${form.q}` : 'Events', 'events', main, {
      status: problems.length ? 400 : 200,
      refresh: !form.q && !q.cursor,
    });
  });

  router.get('/events/:eventId/evidence/:file', async (req, res) => {
    const file = EVIDENCE_FILES.find((f) => f === req.params.file);
    if (!deps.archive || !file) return refuse(req, res, 404, 'No such file', 'No such evidence file.');
    const { files } = await deps.archive.evidence(req.params.eventId);
    res.setHeader('content-type', file === 'evidence.json' ? 'application/json' : 'application/octet-stream');
    res.setHeader('content-disposition', `attachment; filename="${file}"`);
    res.send(files[file]);
  });

  router.get('/events/:eventId', async (req, res) => {
    const detail = await eventDetail(deps.pipeline, req.params.eventId, deps.mask);
    const archived = detail ? undefined : await findEvent(deps.pipeline, req.params.eventId, deps.mask, deps.archive);
    if (archived) return send(req, res, `Event ${archived.eventId}`, 'events', archivedEventPage(archived));
    if (!detail)
      return refuse(
        req,
        res,
        404,
        'No such event',
        `No event ${req.params.eventId} (unknown, or past the retention window).`,
      );
    send(
      req,
      res,
      `Event ${detail.eventId}`,
      'events',
      eventPage(detail, roleOf(req) === 'operator', doneMessage(req.query.done, req.query.n)),
      { refresh: true },
    );
  });

  router.get('/targets', async (req, res) => {
    const targets = await targetOverviews(deps.pipeline, deps.blockedKeys);
    send(
      req,
      res,
      'Targets',
      'targets',
      targetsPage(targets, roleOf(req) === 'operator', doneMessage(req.query.done, req.query.n)),
      { refresh: true },
    );
  });

  router.get('/expectations', async (req, res) => {
    const state = text(req.query.state);
    const rows = await deps.expectations.list({ state: isExpectationState(state) ? state : undefined, limit: 200 });
    send(req, res, 'Expected notifications', 'expectations', expectationsPage(rows, state), { refresh: true });
  });

  router.get('/confirm/:action', async (req, res) => {
    const spec = ACTIONS[req.params.action];
    if (!spec || !Object.hasOwn(ACTIONS, req.params.action))
      return refuse(req, res, 404, 'No such action', `The console has no action ${req.params.action}.`);
    if (roleOf(req) !== 'operator')
      return refuse(req, res, 403, 'Read-only', `${principalOf(req)} is a viewer: actions need an operator.`);
    const p = actionParams(spec, req.query);
    const back = p.event ? `${CONSOLE_PATH}/events/${encodeURIComponent(p.event)}` : `${CONSOLE_PATH}/targets`;
    send(
      req,
      res,
      spec.title,
      '',
      confirmPage(req.params.action, spec, p, await spec.describe(p, deps), csrf.issue(principalOf(req)), back),
    );
  });

  router.post('/actions/:action', express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    const spec = Object.hasOwn(ACTIONS, req.params.action) ? ACTIONS[req.params.action] : undefined;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (roleOf(req) !== 'operator')
      return refuse(req, res, 403, 'Read-only', `${principalOf(req)} is a viewer: actions need an operator.`);
    if (!csrf.check(principalOf(req), body.csrf)) {
      deps.logger.warn('console action refused: missing or bad CSRF token', {
        principal: principalOf(req),
        from: req.socket.remoteAddress,
        action: req.params.action,
      });
      return refuse(
        req,
        res,
        403,
        'Not confirmed',
        'The form’s token is missing, expired or not yours: open the confirmation page again.',
      );
    }
    if (!spec) return refuse(req, res, 404, 'No such action', `The console has no action ${req.params.action}.`);
    const back = await spec.run(actorOf(req), actionParams(spec, body), deps);
    res.redirect(303, back);
  });

  // An error in a console page is a page too: its status and its message (a ServiceError's), or 500.
  router.use((err: Error & { status?: number }, req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof ServiceError)
      return refuse(req, res, err.status, err.status >= 500 ? 'Failed' : 'Refused', err.message);
    const status = err.status && err.status < 500 ? err.status : 500;
    if (status === 500) deps.logger.error('console request failed', { error: err.message, stack: err.stack });
    refuse(
      req,
      res,
      status,
      status === 500 ? 'Failed' : 'Refused',
      status === 500 ? 'internal error (logged)' : err.message,
    );
  });
  return router;
}
