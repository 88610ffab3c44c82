/**
 * The console's HTML: every value passes through `html` (escaped), pages share one layout, and times
 * read as ISO 8601 in UTC with the date. No markup here loads anything from another origin.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Markup that is already safe: built by `html`, never from caller text. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | undefined | null | false | readonly Part[];

function render(part: Part): string {
  if (part === undefined || part === null || part === false) return '';
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join('');
  return String(part as string | number).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A template tag: interpolated values are escaped unless they are Html already. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

/** A time as ISO 8601 UTC with the date, in a <time> element; a dash when there is none. */
export function time(iso: string | number | undefined): Html {
  if (iso === undefined || iso === '') return html`<span aria-label="none">—</span>`;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return html`${String(iso)}`;
  const text = d.toISOString();
  return html`<time datetime="${text}">${text}</time>`;
}

/** A query string from the non-empty entries. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : '';
}

export const CONSOLE_PATH = '/admin/console';

export interface PageContext {
  principal: string;
  role: 'viewer' | 'operator';
  /** The request's CSRF token, for the forms of an operator's page. */
  csrf: string;
}

/** The whole page: header with navigation (and who is signed in), the main content, the small script. */
export function layout(
  ctx: PageContext,
  title: string,
  current: 'events' | 'targets' | 'expectations' | '',
  main: Html,
  opts: { refresh?: boolean } = {},
): string {
  const nav = (href: string, label: string, key: string) =>
    html`<a href="${href}" ${key === current ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<!DOCTYPE html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>${title} · webhook receiver console</title>
        <link rel="stylesheet" href="${CONSOLE_PATH}/assets/console.css" />
        <script src="${CONSOLE_PATH}/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <nav aria-label="Console">
            <span class="brand">Webhook receiver</span>
            ${nav(`${CONSOLE_PATH}/events`, 'Events', 'events')} ${nav(`${CONSOLE_PATH}/targets`, 'Targets', 'targets')}
            ${nav(`${CONSOLE_PATH}/expectations`, 'Expectations', 'expectations')}
            <a href="/admin/queues">Queues (Bull Board)</a>
          </nav>
          <p class="who">${ctx.principal} <span class="role">${ctx.role}</span></p>
        </header>
        <main id="main" ${opts.refresh ? html` data-refresh="5"` : ''}>${main}</main>
      </body>
    </html> `.text;
}

/** A state as a labelled badge, coloured by class (text carries the meaning, colour only repeats it). */
export function badge(state: string, label = state.replace(/_/g, ' ')): Html {
  return html`<span class="badge s-${state}">${label}</span>`;
}
