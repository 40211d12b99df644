/**
 * The page script's groundwork, as browser JavaScript source: DOM building
 * (text only, never markup: every value from the server goes in through
 * text nodes and setAttribute), the JSON client, formatting, the confirm
 * dialog, the flash line, and the router with its refresh loop.
 *
 * The script files of this folder are plain strings joined into one file
 * served at `<path>/assets/dashboard.js`; they use no template literals of
 * their own, so the TypeScript strings hold them unchanged.
 */
export const SCRIPT_CORE = String.raw`
'use strict';
const BASE = document.querySelector('meta[name="dashboard-base"]').getAttribute('content');
const API = BASE + '/api';
const STATES = ['waiting', 'queued', 'scheduled', 'active', 'succeeded', 'failed', 'cancelled', 'skipped'];
const REFRESH_MS = 3000;

/** An element: attributes by name (on* are listeners), children as nodes or text. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}
const SVG_NS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}
function setAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'style') for (const [p, v] of Object.entries(value)) el.style.setProperty(p, v);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
}
function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}
const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
async function api(path, init) {
  const res = await fetch(API + path, Object.assign({ headers: { accept: 'application/json' } }, init));
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    const message = Array.isArray(body.message) ? body.message.join('; ') : body.message;
    throw new ApiError(res.status, message || res.status + ' ' + res.statusText);
  }
  return res.status === 204 ? null : res.json();
}
function post(path, body) {
  return api(path, body === undefined ? { method: 'POST' }
    : { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });
}
const enc = encodeURIComponent;

// Formatting
const num = (n) => Number(n || 0).toLocaleString('en-US');
function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}
function ago(iso) {
  if (!iso) return '';
  const ms = new Date(iso).getTime() - Date.now();
  const abs = Math.abs(ms);
  const text = abs < 1000 ? 'now' : duration(abs);
  return text === 'now' ? text : ms > 0 ? 'in ' + text : text + ' ago';
}
function duration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return '';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  if (ms < 86400000) return Math.floor(ms / 3600000) + ' h ' + Math.round((ms % 3600000) / 60000) + ' min';
  return Math.floor(ms / 86400000) + ' d ' + Math.round((ms % 86400000) / 3600000) + ' h';
}
function time(iso, relative) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: iso }, when(iso), relative ? h('span', { class: 'muted' }, ' (' + ago(iso) + ')') : null);
}
const badge = (state) => h('span', { class: 'badge st-' + state }, state);
const shortId = (id) => id.slice(0, 8) + '…' + id.slice(-4);
const jobLink = (id, text) => h('a', { href: '#/jobs/' + enc(id), class: 'mono', title: id }, text || shortId(id));
const batchLink = (id, text) => h('a', { href: '#/batches/' + enc(id), title: id }, text || shortId(id));
function progressBar(fraction, label) {
  const pct = Math.max(0, Math.min(100, Math.round((fraction || 0) * 100)));
  return h('div', { class: 'progress', role: 'progressbar', 'aria-valuenow': pct, 'aria-valuemin': 0, 'aria-valuemax': 100 },
    h('div', { class: 'progress-fill', style: { width: pct + '%' } }),
    h('span', { class: 'progress-label' }, label === undefined ? pct + '%' : label));
}
function json(value) {
  if (value === undefined) return 'undefined';
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}
function table(headers, rows, empty) {
  return h('table', { class: 'grid' },
    h('thead', null, h('tr', null, headers.map((x) => h('th', x && x.attrs ? x.attrs : null, x && x.attrs ? x.text : x)))),
    h('tbody', null, rows.length ? rows : h('tr', null, h('td', { colspan: headers.length, class: 'empty' }, empty || 'Nothing here.'))));
}
const td = (content, cls) => h('td', cls ? { class: cls } : null, content);

/** <details> that stay open or closed across refreshes, by key. */
const openDetails = new Map();
function details(key, summary, content, openByDefault) {
  const open = openDetails.has(key) ? openDetails.get(key) : !!openByDefault;
  const el = h('details', { 'data-key': key, open }, h('summary', null, summary), content);
  el.addEventListener('toggle', () => openDetails.set(key, el.open));
  return el;
}

// The flash line: what an action did, or why it was refused.
function flash(text, kind) {
  const el = $('flash');
  el.className = 'flash ' + (kind || 'ok');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { el.hidden = true; }, kind === 'error' ? 15000 : 6000);
}

/** Asks before an action; resolves true when confirmed. */
function confirmAction(title, text, okLabel) {
  const dialog = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = okLabel || 'Confirm';
  return new Promise((resolve) => {
    const done = (value) => {
      $('confirm-ok').onclick = null;
      $('confirm-cancel').onclick = null;
      dialog.onclose = null;
      if (dialog.open) dialog.close();
      resolve(value);
    };
    $('confirm-ok').onclick = () => done(true);
    $('confirm-cancel').onclick = () => done(false);
    dialog.onclose = () => done(false);
    dialog.showModal();
    $('confirm-cancel').focus();
  });
}

/** Confirm, run, say what happened, refresh. */
async function act(title, text, okLabel, run, done) {
  if (!(await confirmAction(title, text, okLabel))) return;
  try {
    const result = await run();
    flash(typeof done === 'function' ? done(result) : done, 'ok');
  } catch (error) {
    flash(error.message, 'error');
  }
  await refresh();
}
function actionButton(label, enabled, onclick, cls) {
  return h('button', { type: 'button', class: cls || '', disabled: !enabled, onclick }, label);
}

// Router: a view is { title, nav, toolbar?(), load(), render(data) }; the body refreshes, the toolbar stays.
const views = {};
let current = null;
let generation = 0;
let routedHash = null;
function route() {
  const hash = location.hash || '#/';
  routedHash = hash;
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let view;
  if (parts[0] === 'jobs' && parts[1]) view = views.job(parts[1]);
  else if (parts[0] === 'jobs') view = views.jobs(params);
  else if (parts[0] === 'batches' && parts[1]) view = views.batch(parts[1], params);
  else if (parts[0] === 'batches') view = views.batches(params);
  else if (parts[0] === 'schedules') view = views.schedules();
  else if (parts[0] === 'queues') view = views.queues();
  else view = views.overview();
  current = view;
  generation++;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.nav === view.nav);
  document.title = view.title + ' · ' + $('title').textContent;
  $('toolbar').replaceChildren(...(view.toolbar ? [view.toolbar()] : []));
  $('main').replaceChildren(h('p', { class: 'muted loading' }, 'Loading…'));
  refresh();
}
/** Goes to another view now (no hashchange wait), keeping the back button. */
function navigate(hash) {
  if (location.hash !== hash) history.pushState(null, '', hash);
  route();
}
// One load at a time; a refresh asked for meanwhile runs once more after it, so an action's result shows.
let inFlight = null;
let again = false;
function refresh() {
  if (inFlight) { again = true; return inFlight; }
  inFlight = (async () => {
    do { again = false; await loadOnce(); } while (again);
  })().finally(() => { inFlight = null; });
  return inFlight;
}
async function loadOnce() {
  const view = current;
  const gen = generation;
  const hash = routedHash;
  try {
    const data = await view.load();
    if (gen !== generation) { again = true; return; }
    $('main').replaceChildren(view.render(data));
    // Which view the content shows, for tests and styles: set once it is drawn.
    $('main').dataset.route = hash;
    $('status').textContent = 'Updated ' + new Date().toLocaleTimeString();
    $('status').className = 'status';
  } catch (error) {
    if (gen !== generation) { again = true; return; }
    if (error.status === 404 || $('main').querySelector('.loading')) {
      $('main').replaceChildren(h('p', { class: 'error-box' }, error.message));
    }
    $('status').textContent = 'Could not load: ' + error.message;
    $('status').className = 'status error';
  }
}
`;
