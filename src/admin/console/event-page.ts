import { DELIVERY_STATE_LABELS } from '../../operations/delivery-state';
import type { DeliveryDetail, EventDetail, OrderingView } from '../../operations/event-detail';
import type { AttemptView, SeriesView } from '../../operations/event-lookup';
import { whereText } from '../../operations/event-where';
import { badge, CONSOLE_PATH, html, query, time, type Html } from './html';

const TRIGGER_LABEL: Record<SeriesView['trigger'], string> = {
  received: 'received',
  replay: 'replay',
  resend: 'resend',
};

function excerptOf(a: AttemptView): string {
  if (a.outcome === 'delivered') return '';
  if (a.outcome === 'dropped') return 'the transform returned null: nothing was sent';
  return a.responseExcerpt ? a.responseExcerpt : a.error;
}

/** The status column: the target's HTTP status, a broker's confirmation, or how the attempt failed. */
function statusOf(a: AttemptView): string {
  if (a.outcome === 'dropped') return '';
  if (a.outcome === 'delivered') return String(a.status ?? a.confirmed ?? '');
  return String(a.status ?? a.errorClass ?? '');
}

function attemptRows(series: SeriesView): Html {
  const head = html`<tr class="series">
    <th scope="rowgroup" colspan="6">
      Series ${series.n}:
      <span class="badge s-${series.trigger}" data-trigger="${series.trigger}">${TRIGGER_LABEL[series.trigger]}</span>
      by <span class="mono" data-by>${series.by}</span> at ${time(series.at)}
    </th>
  </tr>`;
  const rows = series.attempts.length
    ? series.attempts.map(
        (a) =>
          html`<tr>
            <td>${a.attempt}</td>
            <td>${time(a.at)}</td>
            <td>${badge(a.outcome === 'failed' ? 'failed' : a.outcome, a.outcome)}</td>
            <td>${statusOf(a)}</td>
            <td>${a.latencyMs !== undefined ? `${a.latencyMs} ms` : ''}</td>
            <td class="mono">${excerptOf(a)}</td>
          </tr>`,
      )
    : html`<tr>
        <td colspan="6" class="muted">no attempt finished yet</td>
      </tr>`;
  return html`<tbody>
    ${head}${rows}
  </tbody>`;
}

function orderingText(o: OrderingView): Html {
  const where =
    o.position === undefined
      ? 'not in its key’s sequence (done, released, or sent again after it was done)'
      : o.position === 0
        ? o.blocked
          ? 'heads its key’s sequence as a dead letter: later deliveries of the key wait for it'
          : 'heads its key’s sequence: it goes now'
        : html`number ${o.position + 1} in line; waits for
            <a class="mono" href="${CONSOLE_PATH}/events/${encodeURIComponent(o.waitsFor ?? '')}">${o.waitsFor}</a
            >${o.blocked ? ', a dead letter that blocks the key' : ''}`;
  return html`<p>Ordering key <span class="mono">${o.key}</span>: ${where}.</p>`;
}

/**
 * The copies that arrived after the first: duplicates (answered 200, not queued again) and repeats of
 * a request already accepted (the platform's or anyone's; refused). "Replay" is the operator's word.
 */
function copiesText(e: EventDetail): Html {
  const c = e.copies;
  if (!c) return html`<span class="muted">not counted for a quarantined notification</span>`;
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  const counts = html`<span data-copies="${c.duplicates} ${c.replays}"
    >${n(c.duplicates, 'duplicate', 'duplicates')}, ${n(c.replays, 'repeat', 'repeats')} refused</span
  >`;
  return c.lastAt ? html`${counts}; the last at ${time(c.lastAt)}` : counts;
}

function deliveryActions(eventId: string, d: DeliveryDetail): Html {
  const link = (action: string, label: string, params: Record<string, string>, cls = 'secondary') =>
    html`<a class="button ${cls}" href="${CONSOLE_PATH}/confirm/${action}${query(params)}">${label}</a>`;
  const parts: Html[] = [];
  if (d.consoleState !== 'filtered' && d.consoleState !== 'unreadable')
    parts.push(link('resend', `Resend to ${d.target}…`, { event: eventId, target: d.target }));
  if (d.consoleState === 'dead_letter') {
    parts.push(link('replay', 'Replay dead letter…', { id: `${d.target}/${eventId}` }));
    parts.push(link('discard', 'Discard dead letter…', { target: d.target, event: eventId }, 'danger'));
    if (d.ordering?.blocked && d.ordering.position === 0)
      parts.push(link('release', 'Release its ordering key…', { target: d.target, key: d.ordering.key }));
  }
  return parts.length ? html`<div class="actions">${parts}</div>` : html``;
}

/** Attempts across every series, and per series when there were several. */
function attemptsWords(d: DeliveryDetail): string {
  const n = d.totalAttempts;
  const each = d.series.length > 1 ? ` (${d.series.map((s) => `series ${s.n}: ${s.attempts.length}`).join(', ')})` : '';
  return `${n} attempt${n === 1 ? '' : 's'}${each}`;
}

function deliverySection(eventId: string, d: DeliveryDetail, canAct: boolean): Html {
  const label = d.consoleState === 'unreadable' ? 'unreadable' : DELIVERY_STATE_LABELS[d.consoleState];
  const body =
    d.consoleState === 'filtered'
      ? html`<p class="muted">
          The target’s filter left this event out: nothing was sent, and a resend does not override it.
        </p>`
      : d.consoleState === 'unreadable'
        ? html`<p>
            Its delivery job cannot be read, so nothing of it is shown: <span class="mono">${d.unreadable}</span>
          </p>`
        : html`<div
            class="table-wrap"
            tabindex="0"
            role="region"
            aria-label="Attempts to ${d.target}, scrolls sideways"
          >
            <table aria-label="Attempts to ${d.target}">
              <thead>
                <tr>
                  <th scope="col">Attempt</th>
                  <th scope="col">At (UTC)</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Status</th>
                  <th scope="col">Latency</th>
                  <th scope="col">Answer (excerpt) or error</th>
                </tr>
              </thead>
              ${d.series.map(attemptRows)}
            </table>
          </div>`;
  return html`<section class="delivery" data-target="${d.target}" aria-labelledby="t-${d.target}">
    <h3 id="t-${d.target}">${d.target} ${badge(d.consoleState, label)}</h3>
    ${d.totalAttempts ? html`<p data-attempts="${d.totalAttempts}">${attemptsWords(d)}</p>` : ''}
    ${d.deliveredAt ? html`<p>Delivered at ${time(d.deliveredAt)}.</p>` : ''}
    ${
      d.consoleState === 'dead_letter' && d.failedReason
        ? html`<p>Last failure: <span class="mono">${d.failedReason}</span></p>`
        : ''
    }
    ${d.ordering ? orderingText(d.ordering) : ''} ${body} ${canAct ? deliveryActions(eventId, d) : ''}
  </section>`;
}

/** The first facts of an event page, live or archived: its type, when it was received, its environment. */
export function receiptFacts(e: Pick<EventDetail, 'eventType' | 'receivedAt' | 'environment' | 'facts'>): Html {
  const amount = e.facts.amount !== undefined ? `${e.facts.amount} ${e.facts.currency ?? ''}`.trim() : '—';
  return html`<dt>Type</dt>
    <dd>${e.eventType}</dd>
    <dt>request_id</dt>
    <dd class="mono" data-request-id>${e.facts.requestId ?? '—'}</dd>
    <dt>Amount</dt>
    <dd data-amount>${amount}</dd>
    <dt>Received (UTC)</dt>
    <dd>${time(e.receivedAt)}</dd>
    <dt>Environment</dt>
    <dd>${e.environment ?? '—'}</dd>`;
}

/**
 * One event's story: its receipt, the payload (masked) and, for every target, its state and every attempt of every
 * series.
 */
export function eventPage(e: EventDetail, canAct: boolean, done: string | undefined): Html {
  const payload =
    e.payload !== undefined
      ? html`<p class="muted">Sensitive fields are masked.</p>
          <pre tabindex="0" aria-label="Payload, sensitive fields masked">${JSON.stringify(e.payload, null, 2)}</pre>`
      : e.body !== undefined
        ? html`<p class="muted">
              The body as received:
              ${e.bodyEncoding === 'base64' ? 'not UTF-8, shown in Base64' : 'not JSON, shown as text'}.
            </p>
            <pre tabindex="0" aria-label="Body as received" data-body>${e.body}</pre>`
        : html`<p class="muted">No payload to show: no job of this event holds its body.</p>`;
  return html`<h1>Event <span class="mono">${e.eventId}</span></h1>
    ${done ? html`<p class="notice" role="status">${done}</p>` : ''}
    <dl class="facts">
      ${receiptFacts(e)}
      <dt>Nonce</dt>
      <dd class="mono">${e.nonce ?? '— (legacy scheme: the replay key is a hash of the signature)'}</dd>
      <dt>Copies after the first</dt>
      <dd>${copiesText(e)}</dd>
      <dt>webhook-id</dt>
      <dd class="mono">${e.eventId}</dd>
      ${
        e.merchantId
          ? html`<dt>X-Merch-Id</dt>
              <dd>${e.merchantId}</dd>`
          : ''
      }
      ${
        e.traceId
          ? html`<dt>Trace id</dt>
              <dd class="mono">${e.traceId}</dd>`
          : ''
      }
      <dt>Path</dt>
      <dd class="mono">${e.path}</dd>
      <dt>Where</dt>
      <dd data-where="${e.state}">${whereText(e)}${e.corrected ? '; replayed with a corrected body' : ''}</dd>
      ${
        e.errors?.length
          ? html`<dt>Errors</dt>
              <dd>${e.errors.join('; ')}</dd>`
          : ''
      }
    </dl>
    ${
      canAct && e.deliveries.some((d) => d.consoleState !== 'filtered')
        ? html`<div class="actions">
            <a class="button" href="${CONSOLE_PATH}/confirm/resend${query({ event: e.eventId })}"
              >Resend to every target…</a
            >
          </div>`
        : ''
    }
    <h2>Deliveries</h2>
    ${
      e.deliveries.length
        ? e.deliveries.map((d) => deliverySection(e.eventId, d, canAct))
        : html`<p>No target took this event.</p>`
    }
    <h2>Payload</h2>
    ${payload}`;
}
