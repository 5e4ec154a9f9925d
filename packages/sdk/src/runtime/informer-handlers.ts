/**
 * An informer's event handlers: each event goes to every handler in turn, and a handler that throws
 * is logged without keeping the event from the others or stopping the informer.
 *
 * @module
 */
import type { InformerHandler } from "./informer-types.js";
import type { RuntimeLogger } from "./logging.js";

/** The handlers of one informer, in the order they were added. */
export class InformerHandlers<T> {
  readonly #handlers = new Set<InformerHandler<T>>();
  readonly #log: RuntimeLogger;

  /** @param log - the informer's logger, which names a handler's throw */
  constructor(log: RuntimeLogger) {
    this.#log = log;
  }

  /** Adds `handler`, replaying `cached` to it as initial adds; returns a function removing it. */
  add(handler: InformerHandler<T>, cached: Iterable<T> | undefined): () => void {
    this.#handlers.add(handler);
    if (cached && handler.onAdd) {
      for (const obj of cached) this.#call(() => handler.onAdd?.(obj, { initial: true }));
    }
    return () => this.#handlers.delete(handler);
  }

  emitAdd(obj: T, initial: boolean): void {
    for (const handler of this.#handlers) this.#call(() => handler.onAdd?.(obj, { initial }));
  }

  emitUpdate(oldObj: T, newObj: T, initial: boolean): void {
    for (const handler of this.#handlers)
      this.#call(() => handler.onUpdate?.(oldObj, newObj, { initial }));
  }

  emitDelete(obj: T, finalStateUnknown: boolean): void {
    for (const handler of this.#handlers)
      this.#call(() => handler.onDelete?.(obj, { finalStateUnknown }));
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#log.error({ err: error }, "informer event handler threw; continuing");
    }
  }
}
