const MASK = '***';
/** Credentials and signatures: anything an attacker could reuse or that proves who sent a request. */
const SENSITIVE = /authorization|cookie|token|secret|password|api[-_]?key|sign(ature)?$/i;

/**
 * A copy of request headers fit for a log or an admin view: credential and signature values are
 * masked (an `Authorization` keeps its scheme word), everything else is shown.
 */
export function maskHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!SENSITIVE.test(name)) out[name] = value;
    else if (/authorization/i.test(name) && /^\w+ /.test(value)) out[name] = `${value.split(' ', 1)[0]} ${MASK}`;
    else out[name] = MASK;
  }
  return out;
}
