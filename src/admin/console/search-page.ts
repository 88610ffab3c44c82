import type { EventFacts } from '../../model/event-facts';
import { EVENT_TYPES } from '../../model/event-table';
import { DELIVERY_STATES, DELIVERY_STATE_LABELS } from '../../operations/delivery-state';
import type { SearchPage, SearchQuery, SearchRow } from '../../operations/event-search';
import type { Expectation } from '../../reconciliation/expectation';
import { expectationsTable } from './expectations-page';
import { badge, CONSOLE_PATH, html, query, time, type Html } from './html';

export interface SearchForm {
  q: string;
  type: string;
  environment: string;
  target: string;
  state: string;
  from: string;
  to: string;
}

function select(name: string, label: string, value: string, options: readonly (readonly [string, string])[]): Html {
  return html`<label
    >${label}<select name="${name}">
      <option value="">any</option>
      ${options.map(([v, text]) => html`<option value="${v}" ${v === value ? html` selected` : ''}>${text}</option>`)}
    </select></label
  >`;
}

/** The search form, filled with what was asked. */
function searchForm(form: SearchForm, environments: readonly string[], targets: readonly string[]): Html {
  const pairs = (list: readonly string[]) => list.map((v) => [v, v] as const);
  return html`<form class="search" method="get" action="${CONSOLE_PATH}/events" role="search">
    <label class="q"
      >request_id, event id or webhook-id<input
        type="search"
        name="q"
        value="${form.q}"
        placeholder="PAY20261121000001 or evt_…"
        autocomplete="off"
    /></label>
    ${select('type', 'Event type', form.type, pairs(EVENT_TYPES))}
    ${select('environment', 'Environment', form.environment, pairs(environments))}
    ${select('target', 'Target', form.target, pairs(targets))}
    ${select(
      'state',
      'Delivery state',
      form.state,
      DELIVERY_STATES.map((s) => [s, DELIVERY_STATE_LABELS[s]] as const),
    )}
    <label
      >Received from (UTC)<input
        type="text"
        name="from"
        value="${form.from}"
        placeholder="2026-11-23T16:00:00Z"
        inputmode="numeric"
    /></label>
    <label
      >to (UTC)<input type="text" name="to" value="${form.to}" placeholder="2026-11-23T17:00:00Z" inputmode="numeric"
    /></label>
    <button type="submit">Search</button>
  </form>`;
}

/** A row the archive told, marked as such. */
function fromArchive(r: SearchRow): Html | '' {
  return r.source === 'archive' ? html` <span class="badge" data-source="archive">archive</span>` : '';
}

function stateLabel(state: string): string {
  return state in DELIVERY_STATE_LABELS ? DELIVERY_STATE_LABELS[state as keyof typeof DELIVERY_STATE_LABELS] : state;
}

/** The request id, amount and currency under an event's id, when the body has them. */
export function factsLine(f: EventFacts): Html | '' {
  const money = f.amount !== undefined ? `${f.amount}${f.currency ? ` ${f.currency}` : ''}` : '';
  if (f.requestId === undefined && !money) return '';
  const text = [f.requestId !== undefined ? `request_id ${f.requestId}` : '', money].filter(Boolean).join(' · ');
  return html`<span class="facts-line" data-facts>${text}</span>`;
}

/** The search page: the form, then the matching deliveries, newest first, with the way to the next page. */
export function searchPage(
  form: SearchForm,
  page: SearchPage | undefined,
  problem: string | undefined,
  opts: {
    environments: readonly string[];
    targets: readonly string[];
    canAct: boolean;
    q: SearchQuery;
    /** The expectations of the request_id searched for, shown beside its events. */
    expectations?: readonly Expectation[];
  },
): Html {
  const rows = page?.rows ?? [];
  const text = form.q.trim();
  const heading = text ? html`Events for <span class="mono">${text}</span>` : 'Events';
  const caption =
    page?.by === 'request_id'
      ? `by request_id ${text}`
      : page?.by === 'event_id'
        ? `by event id ${text}`
        : 'newest first, by last change';
  const archiveNote =
    page?.source === 'archive' ? '; rows marked archive come from the archive (Redis no longer holds them)' : '';
  const table = rows.length
    ? html`<div class="table-wrap">
        <table class="cards">
          <caption class="muted">
            ${rows.length} ${rows.length === 1 ? 'delivery' : 'deliveries'} ${caption}${archiveNote}
          </caption>
          <thead>
            <tr>
              <th scope="col">Last change (UTC)</th>
              <th scope="col">Received (UTC)</th>
              <th scope="col">Event</th>
              <th scope="col">Type</th>
              <th scope="col">Environment</th>
              <th scope="col">Target</th>
              <th scope="col">State</th>
              <th scope="col">Attempts</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (r) =>
                html`<tr>
                  <td data-label="Last change (UTC)">${time(r.at)}</td>
                  <td data-label="Received (UTC)">${time(r.receivedAt)}</td>
                  <td class="mono" data-label="Event">
                    <a href="${CONSOLE_PATH}/events/${encodeURIComponent(r.eventId)}">${r.eventId}</a>
                    ${factsLine(r.facts)}
                  </td>
                  <td data-label="Type">${r.eventType}</td>
                  <td data-label="Environment">${r.environment ?? ''}</td>
                  <td data-label="Target">${r.target || html`<span class="muted">none</span>`}</td>
                  <td data-label="State">${badge(r.state, stateLabel(r.state))}${fromArchive(r)}</td>
                  <td data-label="Attempts" data-attempts="${r.attempts}">${r.attempts}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`
    : problem
      ? ''
      : html`<p>
          ${
            text
              ? `No event with request_id, event id or webhook-id ${text} ` +
                '(unknown, or past the retention and de-duplication windows).'
              : 'No deliveries match.'
          }
        </p>`;
  const budget = page?.budgetSpent
    ? html`<p class="muted">
        Looked at ${page.scanned} deliveries, back to ${time(page.reachedBack)}; older ones are on the next page.
      </p>`
    : '';
  const nextLink = page?.next
    ? html`<a class="button secondary" href="${CONSOLE_PATH}/events${query({ ...form, cursor: page.next })}" rel="next"
        >Older →</a
      >`
    : '';
  const replayAll =
    opts.canAct && form.state === 'dead_letter' && rows.length > 0
      ? html`<a
          class="button"
          href="${CONSOLE_PATH}/confirm/replay-all${query({ target: form.target, eventType: form.type })}"
          >Replay matching dead letters…</a
        >`
      : '';
  return html`<h1>${heading}</h1>
    ${searchForm(form, opts.environments, opts.targets)}
    ${problem ? html`<p class="error" role="alert">${problem}</p>` : ''} ${table}
    ${opts.expectations?.length ? expectationsTable(opts.expectations, `expected for request_id ${text}`) : ''}
    <div class="pager">
      ${nextLink}${replayAll}${form.q || opts.q.cursor ? html`<a href="${CONSOLE_PATH}/events">Newest</a>` : ''}
    </div>
    ${budget}`;
}
