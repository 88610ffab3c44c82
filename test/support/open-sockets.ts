import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * How many TCP connections of this process are established to 127.0.0.1:`port`, read from /proc
 * (Linux): what a broker that is frozen cannot tell us, the process's own side says.
 */
export function establishedTo(port: number): number {
  const mine = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
      if (inode) mine.add(inode);
    } catch {
      // closed while we read the directory
    }
  }
  const remote = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return (
    readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // sl local rem_address st tx:rx tr:when retrnsmt uid timeout inode; 01 is ESTABLISHED.
      .filter((f) => f[2] === remote && f[3] === '01' && mine.has(f[9]!)).length
  );
}
