import { EXPECTATION_STATES, type Expectation } from '../../reconciliation/expectation';
import { badge, CONSOLE_PATH, html, query, time, type Html } from './html';

const eventLink = (id: string | undefined) =>
  id ? html`<a class="mono" href="${CONSOLE_PATH}/events/${encodeURIComponent(id)}">${id}</a>` : '';

const COLUMNS = ['Due (UTC)', 'request_id', 'Type', 'Environment', 'State', 'Inquiries', 'Last finding', 'Event'];

/** Expectations as a table: what is awaited, by when, and what became of it. */
export function expectationsTable(rows: readonly Expectation[], caption: string): Html {
  return html`<div class="table-wrap">
    <table>
      <caption class="muted">
        ${rows.length} ${rows.length === 1 ? 'expectation' : 'expectations'} ${caption}
      </caption>
      <thead>
        <tr>
          ${COLUMNS.map((c) => html`<th scope="col">${c}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (e) =>
            html`<tr id="${e.id}">
              <td>${time(e.dueBy)}</td>
              <td class="mono">
                <a href="${CONSOLE_PATH}/events${query({ q: e.requestId })}">${e.requestId}</a>
              </td>
              <td>${e.eventType}</td>
              <td>${e.environment}</td>
              <td>${badge(e.state)}</td>
              <td>${e.attempts}</td>
              <td>${e.lastOutcome ?? ''}</td>
              <td>
                ${eventLink(e.metBy ?? e.inquiryEventId)}
                ${e.lateEventId ? html`late: ${eventLink(e.lateEventId)}` : ''}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** The expectations page: a state filter, then the newest expectations. */
export function expectationsPage(rows: readonly Expectation[], state: string): Html {
  const none = html`<p>No expectations${state ? ` ${state.replace(/_/g, ' ')}` : ''}.</p>`;
  return html`<h1>Expected notifications</h1>
    <form class="search" method="get" action="${CONSOLE_PATH}/expectations">
      <label
        >State<select name="state">
          <option value="">any</option>
          ${EXPECTATION_STATES.map(
            (s) => html`<option value="${s}" ${s === state ? html` selected` : ''}>${s.replace(/_/g, ' ')}</option>`,
          )}
        </select></label
      >
      <button type="submit">Show</button>
    </form>
    ${rows.length ? expectationsTable(rows, 'newest first') : none}`;
}
