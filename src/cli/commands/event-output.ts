import type { AttemptView, DeliveryView, EventCopies, EventView } from '../../operations/event-lookup';
import { whereText } from '../../operations/event-where';
import { formatTable } from '../table';

type Out = (line: string) => void;

/** The copies of an event that came after the first, in words. */
function copiesLine({ duplicates, replays, lastAt }: EventCopies): string {
  const n = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
  const last = lastAt ? `; the last at ${lastAt}` : '';
  return `copies after the first: ${n(duplicates, 'duplicate')}, ${n(replays, 'repeat')} refused${last}`;
}

/** Attempts across every series, with each series' count when there were several: `3 (2+1)`. */
export function attemptsText(d: DeliveryView): string {
  const total = String(d.totalAttempts);
  return d.series.length > 1 ? `${total} (${d.series.map((s) => s.attempts.length).join('+')})` : total;
}

/** What the target answered: a broker's confirmation, or an excerpt of an HTTP answer. */
function answerOf(a: AttemptView): string {
  if ('confirmed' in a && a.confirmed !== undefined) return `confirmed: ${a.confirmed}`;
  if ('responseExcerpt' in a && a.responseExcerpt) return a.responseExcerpt.replace(/\s+/g, ' ').slice(0, 60);
  return '';
}

/** The deliveries with the target asked about first. */
function ordered(deliveries: readonly DeliveryView[], first: string | undefined): DeliveryView[] {
  const asked = deliveries.filter((d) => d.target === first);
  return [...asked, ...deliveries.filter((d) => d.target !== first)];
}

/** One event as `cli event` prints it: what the console's event page shows, in text. */
export function printEvent(event: EventView, out: Out, firstTarget?: string): void {
  const { facts } = event;
  const money = facts.amount !== undefined ? `  ${facts.amount}${facts.currency ? ` ${facts.currency}` : ''}` : '';
  out(
    `${event.eventId}  ${event.eventType}  ${event.environment ?? ''}  received ${event.receivedAt}  ` +
      whereText(event),
  );
  if (facts.requestId !== undefined || money) out(`  request_id ${facts.requestId ?? '(none)'}${money}`);
  if (event.archived)
    out(
      `  from the archive (Redis no longer holds it): row ${event.archived.id}, ` +
        `${event.archived.outcome}, ${event.archived.receipts} receipt(s)`,
    );
  if (event.traceId) out(`  trace ${event.traceId}`);
  if (event.copies) out(`  ${copiesLine(event.copies)}`);
  if (event.corrected) out('  corrected: its body was replaced by an operator; the platform did not sign it');
  if (event.errors) out(`  quarantined: ${event.errors.join('; ')}`);
  const deliveries = ordered(event.deliveries, firstTarget);
  if (deliveries.length) {
    out(
      formatTable(
        ['TARGET', 'STATE', 'ATTEMPTS', 'DELIVERED AT', 'LAST ERROR'],
        // The last error of the current series: one a replay or resend has since put right is in the story below.
        deliveries.map((d) => [
          d.target,
          d.state,
          attemptsText(d),
          d.deliveredAt,
          d.unreadable ??
            d.series
              .at(-1)
              ?.attempts.filter((a) => a.outcome === 'failed')
              .at(-1)?.error,
        ]),
      ),
    );
  }
  if (deliveries.some((d) => d.attempts.length)) {
    // One row per series start (what started it, who, when), then its attempts, numbered within it.
    const rows = deliveries.flatMap((d) =>
      d.series.flatMap((s) => [
        [d.target, `${s.n}`, s.at, `series ${s.n}: ${s.trigger}`, '', '', '', `by ${s.by}`],
        ...s.attempts.map((a) => [
          a.target ?? d.target,
          `${s.n}.${a.attempt}`,
          a.at,
          a.outcome,
          'status' in a ? a.status : '',
          'errorClass' in a ? a.errorClass : '',
          a.latencyMs === undefined ? '' : `${a.latencyMs} ms`,
          answerOf(a),
        ]),
      ]),
    );
    out(formatTable(['TARGET', '#', 'AT', 'OUTCOME', 'STATUS', 'CLASS', 'LATENCY', 'ANSWER'], rows));
  }
  if (event.payload !== undefined) out(`payload (sensitive fields masked): ${JSON.stringify(event.payload)}`);
  else if (event.body !== undefined)
    out(
      `body as received (${event.bodyEncoding === 'base64' ? 'not UTF-8, in Base64' : 'not JSON'}): ` +
        JSON.stringify(event.body),
    );
}
