import type { TargetOverview } from '../../operations/target-overview';
import { CONSOLE_PATH, html, query, time, type Html } from './html';

function rateLimitText(r: TargetOverview['rateLimit']): string {
  return r ? `${r.max} per ${r.perMs} ms` : 'none';
}

function blockedSection(t: TargetOverview, canAct: boolean): Html {
  if (!t.ordered || t.blocked.length === 0) return html``;
  return html`<h3>${t.target}: ordering keys held back by a dead letter</h3>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Keys of ${t.target} held back">
      <table>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Dead letter</th>
            <th scope="col">Since (UTC)</th>
            <th scope="col">Waiting behind</th>
            ${canAct ? html`<th scope="col">Action</th>` : ''}
          </tr>
        </thead>
        <tbody>
          ${t.blocked.map(
            (b) =>
              html`<tr>
                <td class="mono">${b.key}</td>
                <td class="mono"><a href="${CONSOLE_PATH}/events/${encodeURIComponent(b.eventId)}">${b.eventId}</a></td>
                <td>${time(b.since)}</td>
                <td>${b.waiting}</td>
                ${
                  canAct
                    ? html`<td>
                        <a
                          class="button secondary"
                          href="${CONSOLE_PATH}/confirm/release${query({ target: t.target, key: b.key })}"
                          >Release…</a
                        >
                      </td>`
                    : ''
                }
              </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
}

/** Every target at a glance, with the way to its dead letters and, for an operator, pause, resume and replay. */
export function targetsPage(targets: readonly TargetOverview[], canAct: boolean, done: string | undefined): Html {
  const rows = targets.map((t) => {
    const deadLetters = html`<a href="${CONSOLE_PATH}/events${query({ target: t.target, state: 'dead_letter' })}"
      >${t.deadLetters}</a
    >`;
    const actions = canAct
      ? html`<div class="actions">
          ${
            t.paused
              ? html`<a class="button secondary" href="${CONSOLE_PATH}/confirm/resume${query({ target: t.target })}"
                  >Resume…</a
                >`
              : html`<a class="button secondary" href="${CONSOLE_PATH}/confirm/pause${query({ target: t.target })}"
                  >Pause…</a
                >`
          }${
            t.deadLetters > 0
              ? html`<a class="button secondary" href="${CONSOLE_PATH}/confirm/replay-all${query({ target: t.target })}"
                  >Replay dead letters…</a
                >`
              : ''
          }
        </div>`
      : '';
    return html`<tr>
      <th scope="row">${t.target}<br /><span class="muted">${t.where}</span>${actions}</th>
      <td data-label="Paused">${t.paused ? html`<span class="badge s-paused">paused</span>` : 'no'}</td>
      <td data-label="Delivered, last hour">${t.deliveredLastHour}</td>
      <td data-label="Dead-lettered, last hour">${t.deadLetteredLastHour}</td>
      <td data-label="Retrying now">${t.retrying}</td>
      <td data-label="Queued or waiting">${t.pending}</td>
      <td data-label="Last success (UTC)">${time(t.lastSuccess)}</td>
      <td data-label="Dead letters">${deadLetters}</td>
      <td data-label="Blocked keys">${t.ordered ? t.blocked.length : html`<span class="muted">not ordered</span>`}</td>
      <td data-label="Rate limit">${rateLimitText(t.rateLimit)}</td>
    </tr>`;
  });
  return html`<h1>Targets</h1>
    ${done ? html`<p class="notice" role="status">${done}</p>` : ''}
    ${
      targets.length === 0
        ? html`<p>No target is configured.</p>`
        : html`<div class="table-wrap">
            <table class="cards-wide">
              <thead>
                <tr>
                  <th scope="col">Target${canAct ? ' and actions' : ''}</th>
                  <th scope="col">Paused</th>
                  <th scope="col">Delivered, last hour</th>
                  <th scope="col">Dead-lettered, last hour</th>
                  <th scope="col">Retrying now</th>
                  <th scope="col">Queued or waiting</th>
                  <th scope="col">Last success (UTC)</th>
                  <th scope="col">Dead letters</th>
                  <th scope="col">Blocked keys</th>
                  <th scope="col">Rate limit</th>
                </tr>
              </thead>
              <tbody>
                ${rows}
              </tbody>
            </table>
          </div>`
    }
    ${targets.map((t) => blockedSection(t, canAct))}`;
}
