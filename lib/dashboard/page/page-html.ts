/**
 * What the page's Content-Security-Policy allows: its own script, style and
 * JSON, nothing inline, no frames around it. A value that escaped as markup
 * still could not run.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The page's shell: static markup, the title and the base path escaped;
 * everything else is drawn by the script from the JSON endpoints.
 * `base` is the path the page was requested at, without a trailing slash.
 */
export function pageHtml(title: string, base: string): string {
  const t = escapeHtml(title);
  const b = escapeHtml(base);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="dashboard-base" content="${b}">
<title>${t}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${b}/assets/dashboard.css">
<link rel="stylesheet" href="${b}/assets/views.css">
<script type="module" src="${b}/assets/dashboard.js"></script>
</head>
<body>
<header>
  <h1 id="title">${t}</h1>
  <nav>
    <a href="#/" data-nav="overview">Overview</a>
    <a href="#/jobs" data-nav="jobs">Jobs</a>
    <a href="#/batches" data-nav="batches">Batches</a>
    <a href="#/schedules" data-nav="schedules">Schedules</a>
    <a href="#/queues" data-nav="queues">Queues</a>
  </nav>
  <span id="replica" class="replica" hidden></span>
  <span id="status" class="status" role="status">Loading…</span>
</header>
<div id="toolbar"></div>
<main id="main"><noscript>This dashboard needs JavaScript.</noscript></main>
<div id="flash" class="flash" role="alert" hidden></div>
<dialog id="confirm" aria-labelledby="confirm-title">
  <h2 id="confirm-title"></h2>
  <p id="confirm-text"></p>
  <div class="actions"><button type="button" id="confirm-cancel">Back</button><button type="button" id="confirm-ok" class="primary">Confirm</button></div>
</dialog>
</body>
</html>`;
}

/** Text for HTML: the five characters markup reads, as character references. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
