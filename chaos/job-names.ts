/**
 * The --invoke jobs' names, apart from their handlers so that the checks
 * (and their unit test) load without Nest.
 */

/** --invoke: a parent, whose only work is to ctx.invoke() one child and return what it got. */
export const PARENT_NAME = 'chaos-parent';
/** --invoke: the child, doing ChaosWork's recorded work and returning a result its parent passes on. */
export const CHILD_NAME = 'chaos-child';
