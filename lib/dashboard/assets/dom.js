// @ts-check
/**
 * DOM building, text only, never markup: every value from the server goes
 * in through text nodes and setAttribute, so a value that looks like HTML
 * stays text.
 */
import { ago, enc, shortId, when } from './format.js';

/**
 * What an element holds: nodes, text, nested lists; null, undefined and
 * false are left out, so `cond ? x : null` reads as "x when cond".
 * @typedef {Node | string | number | boolean | null | undefined | Children} Child
 */

/** A list of children, nested as deep as a view likes. @typedef {ChildList} Children */
/** @typedef {{ readonly [index: number]: Child, readonly length: number }} ChildList */

/**
 * Attributes by name: `on*` are listeners, `style` an object of properties,
 * true is an empty attribute, false, null and undefined none.
 * @typedef {Record<string, any> | null | undefined} Attrs
 */

/**
 * An HTML element.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} attrs
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element.
 * @param {string} tag
 * @param {Attrs} attrs
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function s(tag, attrs, ...children) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/**
 * @param {HTMLElement | SVGElement} el
 * @param {Attrs} attrs
 */
function setAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'style') for (const [p, v] of Object.entries(value)) el.style.setProperty(p, String(v));
    else el.setAttribute(key, value === true ? '' : String(value));
  }
}

/**
 * @param {Element} el
 * @param {Child[]} children
 */
function append(el, children) {
  for (const child of /** @type {Child[]} */ (children.flat(Infinity))) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/**
 * An element of the page's shell, which has every id the script asks for.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error('The dashboard page has no #' + id + '.');
  return el;
}

/** A column heading with attributes (a numeric column's class), or a plain one. @typedef {Child | { attrs: Attrs, text: Child }} Heading */

/**
 * A table; with no row, one that says what is missing.
 * @param {Heading[]} headers
 * @param {Child[]} rows
 * @param {string} [empty]
 */
export function table(headers, rows, empty) {
  return h(
    'table',
    { class: 'grid' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        headers.map((x) => (isHeading(x) ? h('th', x.attrs, x.text) : h('th', null, x))),
      ),
    ),
    h(
      'tbody',
      null,
      rows.length
        ? rows
        : h('tr', null, h('td', { colspan: headers.length, class: 'empty' }, empty || 'Nothing here.')),
    ),
  );
}

/**
 * @param {Heading} x
 * @returns {x is { attrs: Attrs, text: Child }}
 */
function isHeading(x) {
  return typeof x === 'object' && x !== null && 'attrs' in x;
}

/**
 * A table cell, with a class when given one.
 * @param {Child} content
 * @param {string} [cls]
 */
export const td = (content, cls) => h('td', cls ? { class: cls } : null, content);

/** Whether each <details> is open, by key, so that a refresh keeps it as the reader left it. */
const openDetails = new Map();

/**
 * A <details> that stays open or closed across refreshes, by key.
 * @param {string} key
 * @param {Child} summary
 * @param {Child} content
 * @param {boolean} [openByDefault]
 */
export function details(key, summary, content, openByDefault) {
  const open = openDetails.has(key) ? openDetails.get(key) : !!openByDefault;
  const el = h('details', { 'data-key': key, open }, h('summary', null, summary), content);
  el.addEventListener('toggle', () => openDetails.set(key, el.open));
  return el;
}

/** A state, coloured. */
export const badge = (/** @type {string} */ state) => h('span', { class: 'badge st-' + state }, state);

/**
 * A link to a job.
 * @param {string} id
 * @param {string} [text]
 */
export const jobLink = (id, text) =>
  h('a', { href: '#/jobs/' + enc(id), class: 'mono', title: id }, text || shortId(id));

/**
 * A link to a batch.
 * @param {string} id
 * @param {string} [text]
 */
export const batchLink = (id, text) => h('a', { href: '#/batches/' + enc(id), title: id }, text || shortId(id));

/**
 * A progress bar for a fraction between 0 and 1, labelled with its percentage unless told otherwise.
 * @param {number | null | undefined} fraction
 * @param {string} [label]
 */
export function progressBar(fraction, label) {
  const pct = Math.max(0, Math.min(100, Math.round((fraction || 0) * 100)));
  return h(
    'div',
    { class: 'progress', role: 'progressbar', 'aria-valuenow': pct, 'aria-valuemin': 0, 'aria-valuemax': 100 },
    h('div', { class: 'progress-fill', style: { width: pct + '%' } }),
    h('span', { class: 'progress-label' }, label === undefined ? pct + '%' : label),
  );
}

/**
 * A <time>, with how far it is from now when `relative`; a dash for none.
 * @param {string | null | undefined} iso
 * @param {boolean} [relative]
 */
export function time(iso, relative) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h(
    'time',
    { datetime: iso, title: iso },
    when(iso),
    relative ? h('span', { class: 'muted' }, ' (' + ago(iso) + ')') : null,
  );
}

/**
 * A button, disabled unless `enabled`.
 * @param {string} label
 * @param {boolean} enabled
 * @param {(event: Event) => unknown} onclick
 * @param {string} [cls]
 */
export function actionButton(label, enabled, onclick, cls) {
  return h('button', { type: 'button', class: cls || '', disabled: !enabled, onclick }, label);
}

/**
 * One term of a <dl> and its value.
 * @param {string} label
 * @param {Child} value
 */
export function fact(label, value) {
  return [h('dt', null, label), h('dd', null, value)];
}
