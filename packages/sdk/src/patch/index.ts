export {
  type PatchableObject,
  type PatchChanges,
  PatchError,
  PatchHelper,
  type PatchOptions,
  type PatchResult,
  resourceOf,
} from "./helper.js";
export {
  createMergePatch,
  type JsonValue,
  MAX_JSON_DEPTH,
  NotJsonError,
  normalizeOmitEmpty,
} from "./json.js";
export {
  httpStatusOf,
  type KubeObject,
  type PatchClient,
  type PatchTransport,
  type ResourceRef,
} from "./transport.js";
