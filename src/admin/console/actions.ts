import type { Actor } from '../../logging/audit';
import { ServiceError } from '../../model/errors';
import type { DeadLetters } from '../../operations/dead-letters';
import type { Recovery } from '../../operations/recovery';
import { CONSOLE_PATH, html, query, type Html } from './html';

/** A console action asked without what it needs. 400. */
export class ActionParamsError extends ServiceError {
  readonly code = 'bad_request';
  readonly status = 400;
}

type Params = Record<string, string>;

export interface ActionDeps {
  recovery: Recovery;
  deadLetters: DeadLetters;
}

interface ActionSpec {
  /** The parameters it takes; those marked `true` are required. */
  params: Record<string, boolean>;
  title: string;
  /**
   * What will happen, for the confirmation page; `none` when there is nothing to do (the confirm button is left out).
   */
  describe(p: Params, deps: ActionDeps): Promise<{ text: Html; none?: boolean }>;
  /** Runs it through the audited operation; answers where to go back to, with what is done. */
  run(actor: Actor, p: Params, deps: ActionDeps): Promise<string>;
}

const eventUrl = (id: string) => `${CONSOLE_PATH}/events/${encodeURIComponent(id)}`;
const targetsUrl = `${CONSOLE_PATH}/targets`;
const MAX_LIST = Number.MAX_SAFE_INTEGER;

/** Every action the console offers: each the same audited operation the admin API and the CLI run. */
export const ACTIONS: Record<string, ActionSpec> = {
  resend: {
    params: { event: true, target: false },
    title: 'Resend an event',
    async describe(p) {
      return {
        text: html`<p>
          Deliver event <span class="mono">${p.event}</span> again to
          ${
            p.target
              ? html`target <strong>${p.target}</strong>`
              : 'every target subscribed to its type (a target whose filter leaves it out is skipped)'
          },
          with the same <span class="mono">webhook-id</span>, as a new attempt series marked
          <strong>resend</strong> with your name.
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      await recovery.resendEvent(actor, p.event!, p.target || undefined);
      return eventUrl(p.event!) + query({ done: 'resend' });
    },
  },
  replay: {
    params: { id: true },
    title: 'Replay a dead letter',
    async describe(p) {
      return {
        text: html`<p>
          Deliver dead letter <span class="mono">${p.id}</span> again with a fresh set of attempts (same
          <span class="mono">webhook-id</span>), as a series marked <strong>replay</strong> with your name.
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      const { replayed } = await recovery.replayDeadLetters(actor, { ids: [p.id!] });
      const eventId = p.id!.slice(p.id!.indexOf('/') + 1);
      return eventUrl(eventId) + query({ done: 'replay', n: replayed.length });
    },
  },
  'replay-all': {
    params: { target: false, eventType: false },
    title: 'Replay dead letters',
    async describe(p, { deadLetters }) {
      const count = (
        await deadLetters.list({ target: p.target || undefined, eventType: p.eventType || undefined, limit: MAX_LIST })
      ).filter((d) => !d.unreadable).length;
      const ofTarget = p.target ? html` of target <strong>${p.target}</strong>` : ' of every target';
      const which = html`${ofTarget}${p.eventType ? html`, type <strong>${p.eventType}</strong>` : ''}`;
      if (count === 0) return { text: html`<p>There is no dead letter${which} to replay.</p>`, none: true };
      return {
        text: html`<p>
          Replay <strong data-count>${count}</strong> dead ${count === 1 ? 'letter' : 'letters'}${which}: each is
          delivered again with a fresh set of attempts, as a series marked <strong>replay</strong> with your name.
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      const { replayed } = await recovery.replayDeadLetters(actor, {
        all: true,
        target: p.target || undefined,
        eventType: p.eventType || undefined,
      });
      return targetsUrl + query({ done: 'replay-all', n: replayed.length });
    },
  },
  discard: {
    params: { target: true, event: true },
    title: 'Discard a dead letter',
    async describe(p) {
      return {
        text: html`<p>
          Remove dead letter <span class="mono">${p.target}/${p.event}</span> for good: it will not be delivered to
          <strong>${p.target}</strong> (a resend could still send it again). An ordering key it holds back goes on.
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      await recovery.discardDeadLetter(actor, p.target!, p.event!);
      return eventUrl(p.event!) + query({ done: 'discard' });
    },
  },
  release: {
    params: { target: true, key: true },
    title: 'Release a blocked ordering key',
    async describe(p) {
      return {
        text: html`<p>
          Let the later deliveries of ordering key <span class="mono">${p.key}</span> of target
          <strong>${p.target}</strong> go on, in order. The dead letter that held them stays (a replay then delivers it
          outside the order).
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      await recovery.releaseBlockedKey(actor, p.target!, p.key!);
      return targetsUrl + query({ done: 'release' });
    },
  },
  pause: {
    params: { target: true },
    title: 'Pause a target',
    async describe(p) {
      return {
        text: html`<p>
          Pause target <strong>${p.target}</strong>: no delivery to it starts until it is resumed; they wait in its
          queue.
        </p>`,
      };
    },
    async run(actor, p, { recovery }) {
      await recovery.setTargetPaused(actor, p.target!, true);
      return targetsUrl + query({ done: 'pause' });
    },
  },
  resume: {
    params: { target: true },
    title: 'Resume a target',
    async describe(p) {
      return { text: html`<p>Resume target <strong>${p.target}</strong>: the deliveries waiting in its queue go.</p>` };
    },
    async run(actor, p, { recovery }) {
      await recovery.setTargetPaused(actor, p.target!, false);
      return targetsUrl + query({ done: 'resume' });
    },
  },
};

/** What an action did, in fixed words (the page shows only these and a count, never text from the address). */
export function doneMessage(done: unknown, n: unknown): string | undefined {
  const count = typeof n === 'string' && /^\d{1,9}$/.test(n) ? Number(n) : undefined;
  switch (done) {
    case 'resend':
      return 'Sent again: each target’s new attempt series is marked resend with your name below.';
    case 'replay':
      return count === 0
        ? 'Nothing replayed: the dead letter was no longer there.'
        : 'Replayed: a new attempt series, marked replay with your name.';
    case 'replay-all':
      return `Replayed ${count ?? 0} dead ${count === 1 ? 'letter' : 'letters'}.`;
    case 'discard':
      return 'Discarded the dead letter.';
    case 'release':
      return 'Released the ordering key: its later deliveries go on.';
    case 'pause':
      return 'Paused the target.';
    case 'resume':
      return 'Resumed the target.';
    default:
      return undefined;
  }
}

/** The action's parameters from a query or a form, each required one present. */
export function actionParams(spec: ActionSpec, source: Record<string, unknown>): Params {
  const out: Params = {};
  for (const [name, required] of Object.entries(spec.params)) {
    const v = source[name];
    if (typeof v === 'string' && v.length > 0 && v.length <= 500) out[name] = v;
    else if (required) throw new ActionParamsError(`missing ${name}`);
  }
  return out;
}

/** The confirmation page: what will happen, and a form that does it (with the CSRF token), or a way back. */
export function confirmPage(
  action: string,
  spec: ActionSpec,
  p: Params,
  described: { text: Html; none?: boolean },
  csrf: string,
  back: string,
): Html {
  return html`<h1>${spec.title}?</h1>
    ${described.text}
    ${
      described.none
        ? ''
        : html`<form method="post" action="${CONSOLE_PATH}/actions/${action}" class="actions">
            <input type="hidden" name="csrf" value="${csrf}" />
            ${Object.entries(p).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}
            <button type="submit">Confirm: ${spec.title.toLowerCase()}</button>
            <a class="button secondary" href="${back}">Cancel</a>
          </form>`
    }
    ${described.none ? html`<p><a href="${back}">Back</a></p>` : ''}`;
}
