/**
 * A client of `idmint serve` (no dependencies: node:http and node:https):
 * values and IDs fetched in batches and handed out from memory, numbers of
 * gap-free series, failing over between several instances.
 */

export { IdClient, ValueClient } from "./clients.js";
export { ClientClosedError, IdmintError } from "./errors.js";
export { SeriesClient } from "./series.js";
