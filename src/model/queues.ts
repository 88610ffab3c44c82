import type { Queue } from 'bullmq';
import type { EventType } from './event-table';
import type { DeliveryJob, DeliveryResult, EventJob, FanoutResult, QuarantineJob } from './jobs';

/** Received events of one type, waiting for fan-out. Job names are the event type. */
export type EventQueue = Queue<EventJob, FanoutResult, EventType>;
/** Verified notifications that are not valid, kept for an operator. */
export type QuarantineQueue = Queue<QuarantineJob, unknown, EventType>;
/** One target's deliveries; a failed job is a dead letter. */
export type DeliveryQueue = Queue<DeliveryJob, DeliveryResult, EventType>;
