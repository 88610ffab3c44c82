import { hostname, userInfo } from 'node:os';
import type { Actor } from '../logging/audit';

/** The CLI acts as `cli:<os user>` from this host; a container without a passwd entry gives its uid. */
export function cliActor(): Actor {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid:${process.getuid?.() ?? 'unknown'}`;
  }
  return { principal: `cli:${user}`, from: hostname() };
}
