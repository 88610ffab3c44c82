import { sandboxThread } from './thread';

// The sandbox thread's entry file (sandbox.ts starts a worker on it).
sandboxThread();
