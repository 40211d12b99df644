// @ts-check
/**
 * The header's replica line: when the dashboard reads from a replica
 * (`monitoring.replica`), how far behind the primary it is, so an operator
 * knows how old what they act on may be. Actions go to the primary, which
 * refuses one the job has moved past. Hidden when reads go to the primary.
 */
import { api, messageOf } from './api.js';
import { byId } from './dom.js';
import { duration } from './format.js';

/** Reads the lag and draws it; never fails the view it refreshes with. */
export async function showReplicaLag() {
  const el = byId('replica');
  try {
    /** @type {{ source: 'primary' | 'replica', lag: null | { standby: boolean, ms: number | null, replayPaused: boolean } }} */
    const { source, lag } = await api('/replica');
    if (source === 'primary' || !lag) {
      el.hidden = true;
      return;
    }
    let text = 'Replica';
    if (!lag.standby) text += ' · lag unknown (not a standby)';
    else if (lag.ms === null) text += ' · lag unknown';
    else text += lag.ms === 0 ? ' · up to date' : ' · ' + duration(lag.ms) + ' behind';
    if (lag.replayPaused) text += ' · replay paused';
    el.textContent = text;
    el.className = 'replica' + (lag.replayPaused || lag.ms === null || lag.ms >= 10000 ? ' behind' : '');
    el.dataset.lagMs = lag.ms === null ? '' : String(lag.ms);
    el.title = 'This page reads a replica, which may be behind the primary; actions run on the primary.';
    el.hidden = false;
  } catch (error) {
    el.textContent = 'Replica · not answering';
    el.className = 'replica behind';
    el.title = messageOf(error);
    el.hidden = false;
  }
}
