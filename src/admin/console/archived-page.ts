import type { EventView } from '../../operations/event-lookup';
import { EVIDENCE_FILES } from '../../archive/export';
import { badge, CONSOLE_PATH, html, time, type Html } from './html';
import { receiptFacts } from './event-page';

/**
 * An event Redis has forgotten, as the archive tells it: the facts of its first receipt, each target's
 * final delivery state, the payload (masked) and the evidence files to download.
 */
export function archivedEventPage(e: EventView): Html {
  const a = e.archived;
  const evidence = (file: string) =>
    html`<li>
      <a href="${CONSOLE_PATH}/events/${encodeURIComponent(e.eventId)}/evidence/${file}" download="${file}">${file}</a>
    </li>`;
  return html`<h1>Event <span class="mono">${e.eventId}</span> ${badge('archived', 'from the archive')}</h1>
    <p class="muted">Redis no longer holds this event; this is what the archive kept.</p>
    <dl class="facts">
      ${receiptFacts(e)}
      <dt>Path</dt>
      <dd class="mono">${e.path}</dd>
      <dt>Outcome</dt>
      <dd>${a?.outcome ?? ''}${e.quarantineReason ? ` (${e.quarantineReason})` : ''}</dd>
      <dt>Scheme, key</dt>
      <dd class="mono">${a?.scheme ?? ''}, SHA-256 ${a?.keyFingerprint ?? ''}</dd>
      <dt>Receipts</dt>
      <dd>${a?.receipts ?? 0}, the last at ${time(a?.lastSeen)}</dd>
      <dt>Archive row</dt>
      <dd class="mono">${a?.id ?? ''}</dd>
    </dl>
    <h2>Deliveries (final state)</h2>
    ${
      e.deliveries.length
        ? html`<div class="table-wrap">
            <table aria-label="Final delivery states">
              <thead>
                <tr>
                  <th scope="col">Target</th>
                  <th scope="col">State</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Ended (UTC)</th>
                </tr>
              </thead>
              <tbody>
                ${e.deliveries.map(
                  (d) =>
                    html`<tr>
                      <td>${d.target}</td>
                      <td>${badge(d.state)}</td>
                      <td>${d.attemptsMade}</td>
                      <td>${time(d.endedAt)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
        : html`<p class="muted">No delivery outcome was archived for this event.</p>`
    }
    <h2>Evidence</h2>
    <p>
      The exact bytes the platform signed, its signature and public key: README says the one openssl command that checks
      them.
    </p>
    <ul>
      ${EVIDENCE_FILES.map(evidence)}
    </ul>
    <h2>Payload</h2>
    <p class="muted">Sensitive fields are masked.</p>
    <pre aria-label="Payload, sensitive fields masked">${JSON.stringify(e.payload, null, 2)}</pre>`;
}
