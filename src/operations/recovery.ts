import { writeAudit, type Actor } from '../logging/audit';
import type { Logger } from '../logging/logger';
import type { BlockedKeys } from './blocked-keys';
import type { DeadLetterFilter, DeadLetters } from './dead-letters';
import type { Quarantine } from './quarantine';
import type { Resender } from './resend';
import type { TargetControl } from './targets';

export type DeadLetterSelection = { ids: readonly string[] } | ({ all: true } & Omit<DeadLetterFilter, 'limit'>);

/**
 * The operator's recoveries (replay or discard dead letters, replay quarantined notifications, pause
 * and resume a target, release an ordering key blocked by a dead letter), each written to the audit log with who acted
 * and what it touched. The admin API and the CLI both go through here, so their audit lines are the same.
 */
export function createRecovery(deps: {
  deadLetters: DeadLetters;
  quarantine: Quarantine;
  targets: TargetControl;
  blockedKeys: BlockedKeys;
  resender: Resender;
  logger: Logger;
}) {
  const { deadLetters, quarantine, targets, blockedKeys, resender, logger } = deps;
  return {
    async replayDeadLetters(actor: Actor, selection: DeadLetterSelection) {
      const result =
        'ids' in selection
          ? await deadLetters.replay(selection.ids, actor.principal)
          : await deadLetters.replayMatching(selection, actor.principal);
      const filter = 'ids' in selection ? undefined : selection;
      writeAudit(logger, actor, 'dead-letters.replay', {
        items: result.replayed,
        notFound: result.notFound,
        replayed: result.replayed.length,
        ...(filter ? { filter } : {}),
      });
      return result;
    },

    /** A refused discard (unknown target, no such delivery, not failed) is audited too: someone asked for it. */
    async discardDeadLetter(actor: Actor, target: string, eventId: string) {
      const items = [`${target}/${eventId}`];
      try {
        const discarded = await deadLetters.discard(target, eventId);
        writeAudit(logger, actor, 'dead-letters.discard', {
          target,
          items,
          eventType: discarded.eventType,
          attempts: discarded.attempts,
        });
        return discarded;
      } catch (err) {
        writeAudit(logger, actor, 'dead-letters.discard', { target, items, refused: (err as Error).message });
        throw err;
      }
    },

    /**
     * A corrected body's audit line names the SHA-256 of the body the platform signed and of the one
     * queued instead; a refused correction is audited too: someone asked for it.
     */
    async replayQuarantined(actor: Actor, ids: readonly string[], correctedBody?: string) {
      const corrected = correctedBody !== undefined;
      let results;
      try {
        results = await quarantine.replay(ids, correctedBody);
      } catch (err) {
        writeAudit(logger, actor, 'quarantine.replay', { items: [...ids], corrected, refused: (err as Error).message });
        throw err;
      }
      const correction = results.find((r) => 'correctedSha256' in r && r.correctedSha256 !== undefined);
      writeAudit(logger, actor, 'quarantine.replay', {
        items: [...ids],
        eventIds: results.flatMap((r) => ('eventId' in r ? [r.eventId] : [])),
        corrected,
        ...(correction && 'correctedSha256' in correction
          ? { originalSha256: correction.originalSha256, correctedSha256: correction.correctedSha256 }
          : {}),
        outcomes: results.map((r) => r.outcome),
      });
      return results;
    },

    /** A refused resend (unknown id, body gone) is audited too: someone asked for it. */
    async resendEvent(actor: Actor, eventId: string, target?: string) {
      try {
        const result = await resender.resend(eventId, target, actor.principal);
        writeAudit(logger, actor, 'event.resend', { items: [eventId], target, targets: result.targets });
        return result;
      } catch (err) {
        writeAudit(logger, actor, 'event.resend', { items: [eventId], target, refused: (err as Error).message });
        throw err;
      }
    },

    async setTargetPaused(actor: Actor, target: string, paused: boolean): Promise<void> {
      await (paused ? targets.pause(target) : targets.resume(target));
      writeAudit(logger, actor, paused ? 'target.pause' : 'target.resume', { target, items: [target] });
    },

    /**
     * Lets an ordering key's later deliveries go on past its dead letter, which stays (`deadLetter`).
     * A refused release (unknown target, not ordered, not blocked) is audited too.
     */
    async releaseBlockedKey(actor: Actor, target: string, key: string) {
      try {
        const released = await blockedKeys.release(target, key);
        writeAudit(logger, actor, 'target.release', {
          target,
          orderKey: key,
          items: [key],
          deadLetter: `${target}/${released.eventId}`,
        });
        return released;
      } catch (err) {
        writeAudit(logger, actor, 'target.release', {
          target,
          orderKey: key,
          items: [key],
          refused: (err as Error).message,
        });
        throw err;
      }
    },
  };
}

export type Recovery = ReturnType<typeof createRecovery>;
