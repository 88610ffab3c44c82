import { z } from 'zod';
import { parseOperatorTime } from '../operations/time';

const time = z.string().transform((s, ctx) => {
  const ms = parseOperatorTime(s);
  if (Number.isNaN(ms)) ctx.addIssue({ code: 'custom', message: 'not a time (ISO 8601 or epoch milliseconds)' });
  return ms;
});

/** Query filters shared by the admin list endpoints. */
export const listQuerySchema = z.object({
  target: z.string().optional(),
  eventType: z.string().optional(),
  from: time.optional(),
  to: time.optional(),
  limit: z.coerce.number().int().min(1).max(10000).optional(),
});

export const replayBodySchema = z.union([
  z.object({ ids: z.array(z.string().min(1)).min(1) }),
  z.object({
    all: z.literal(true),
    target: z.string().optional(),
    eventType: z.string().optional(),
    from: time.optional(),
    to: time.optional(),
  }),
]);
