// @ts-check
/**
 * The router and its refresh loop, the flash line and the confirm dialog.
 * A view is { title, nav, toolbar?(), load(), render(data) }: the body
 * refreshes, the toolbar stays.
 */
import { ApiError, messageOf } from './api.js';
import { byId, h } from './dom.js';
import { showReplicaLag } from './replica.js';

/**
 * @typedef {object} View
 * @property {string} title The document title's first part.
 * @property {string} nav Which link of the navigation is current.
 * @property {() => Node} [toolbar] Drawn once per route, above the body: filters keep their focus.
 * @property {() => Promise<any>} load What the body shows, from the API.
 * @property {(data: any) => Node} render The body, drawn again at every refresh.
 */

/**
 * The views, by route: the hash `#/jobs/<id>` is `job(id)`, and so on.
 * @typedef {object} Views
 * @property {() => View} overview
 * @property {(params: URLSearchParams) => View} jobs
 * @property {(id: string) => View} job
 * @property {(params: URLSearchParams) => View} batches
 * @property {(id: string, params: URLSearchParams) => View} batch
 * @property {() => View} schedules
 * @property {() => View} queues
 */

const REFRESH_MS = 3000;

/** @type {ReturnType<typeof setTimeout> | undefined} */
let flashTimer;

/**
 * The flash line: what an action did, or why it was refused.
 * @param {string} text
 * @param {'ok' | 'error'} [kind]
 */
export function flash(text, kind) {
  const el = byId('flash');
  el.className = 'flash ' + (kind || 'ok');
  el.textContent = text;
  el.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(
    () => {
      el.hidden = true;
    },
    kind === 'error' ? 15000 : 6000,
  );
}

const dialog = () => /** @type {HTMLDialogElement} */ (byId('confirm'));

/**
 * Asks before an action; resolves true when confirmed.
 * @param {string} title
 * @param {string} text
 * @param {string} [okLabel]
 * @returns {Promise<boolean>}
 */
function confirmAction(title, text, okLabel) {
  const box = dialog();
  const ok = byId('confirm-ok');
  const cancel = byId('confirm-cancel');
  byId('confirm-title').textContent = title;
  byId('confirm-text').textContent = text;
  ok.textContent = okLabel || 'Confirm';
  return new Promise((resolve) => {
    const done = (/** @type {boolean} */ value) => {
      ok.onclick = null;
      cancel.onclick = null;
      box.onclose = null;
      if (box.open) box.close();
      resolve(value);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
    box.onclose = () => done(false);
    box.showModal();
    cancel.focus();
  });
}

/**
 * Confirm, run, say what happened, refresh.
 * @template T
 * @param {string} title
 * @param {string} text
 * @param {string} okLabel
 * @param {() => Promise<T>} run
 * @param {string | ((result: T) => string)} done
 */
export async function act(title, text, okLabel, run, done) {
  if (!(await confirmAction(title, text, okLabel))) return;
  acting++;
  try {
    // A load of the view must not reach the server after the action: the view of a job just
    // deleted answers 404. So the action waits for a load under way, and the refresh loop
    // starts none until it is over.
    await inFlight;
    const result = await run();
    flash(typeof done === 'function' ? done(result) : done, 'ok');
  } catch (error) {
    flash(messageOf(error), 'error');
  } finally {
    acting--;
  }
  await refresh();
}

/** Actions under way (see act). */
let acting = 0;

/** @type {Views | null} */
let views = null;
/** @type {View | null} */
let current = null;
let generation = 0;
/** @type {string | null} */
let routedHash = null;

function route() {
  if (!views) return;
  const hash = location.hash || '#/';
  routedHash = hash;
  const [path = '', query] = hash.slice(1).split('?');
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
  for (const a of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('nav a'))) {
    a.classList.toggle('current', a.dataset.nav === view.nav);
  }
  document.title = view.title + ' · ' + byId('title').textContent;
  byId('toolbar').replaceChildren(...(view.toolbar ? [view.toolbar()] : []));
  byId('main').replaceChildren(h('p', { class: 'muted loading' }, 'Loading…'));
  refresh();
}

/**
 * Goes to another view now (no hashchange wait), keeping the back button.
 * @param {string} hash
 */
export function navigate(hash) {
  if (location.hash !== hash) history.pushState(null, '', hash);
  route();
}

// One load at a time; a refresh asked for meanwhile runs once more after it, so an action's result shows.
/** @type {Promise<void> | null} */
let inFlight = null;
let again = false;

/** Loads the current view and draws it; resolves when what was asked for meanwhile is drawn too. */
export function refresh() {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    do {
      again = false;
      await loadOnce();
    } while (again);
  })().finally(() => {
    inFlight = null;
  });
  return inFlight;
}

async function loadOnce() {
  const view = current;
  if (!view) return;
  const gen = generation;
  const hash = routedHash;
  const main = byId('main');
  const status = byId('status');
  try {
    const [data] = await Promise.all([view.load(), showReplicaLag()]);
    if (gen !== generation) {
      again = true;
      return;
    }
    main.replaceChildren(view.render(data));
    // Which view the content shows, for tests and styles: set once it is drawn.
    main.dataset.route = hash ?? '';
    status.textContent = 'Updated ' + new Date().toLocaleTimeString();
    status.className = 'status';
  } catch (error) {
    if (gen !== generation) {
      again = true;
      return;
    }
    if ((error instanceof ApiError && error.status === 404) || main.querySelector('.loading')) {
      main.replaceChildren(h('p', { class: 'error-box' }, messageOf(error)));
    }
    status.textContent = 'Could not load: ' + messageOf(error);
    status.className = 'status error';
  }
}

/**
 * Start: follow the hash, refresh every few seconds while the tab is visible.
 * @param {Views} all
 */
export function start(all) {
  views = all;
  const onNavigation = () => {
    if ((location.hash || '#/') !== routedHash) route();
  };
  window.addEventListener('hashchange', onNavigation);
  window.addEventListener('popstate', onNavigation);
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && acting === 0) refresh();
  });
  setInterval(() => {
    if (!document.hidden && !dialog().open && acting === 0) refresh();
  }, REFRESH_MS);
  route();
}
