export {
  type PatchableObject,
  type PatchChanges,
  PatchError,
  PatchHelper,
  type PatchOptions,
  type PatchResult,
  resourceOf,
} from "./helper.js";
export { createMergePatch, type JsonValue, normalizeOmitEmpty } from "./json.js";
export {
  clientNodeTransport,
  httpStatusOf,
  type KubeObject,
  KubernetesApiError,
  type PatchTransport,
  type ResourceRef,
} from "./transport.js";
