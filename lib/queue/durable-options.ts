import type { EntityManager } from 'typeorm';
import { optionShape } from '../model/index.js';

/** Where `signal()` writes. */
export interface SignalOptions {
  /** Store the signal in this TypeORM transaction: it exists (and wakes the job) only if that commits. */
  manager?: EntityManager;
}

/** How long `getEvent()` waits. */
export interface GetEventOptions {
  /**
   * Wait up to this many ms (real time) for the value to be published; then resolve with null. Left
   * out, `getEvent()` does not wait: the value, or null now.
   */
  timeout?: number;
}

export const SIGNAL_OPTIONS_SHAPE = optionShape<SignalOptions>({ manager: true });
export const GET_EVENT_SHAPE = optionShape<GetEventOptions>({ timeout: true });
