import { Manager } from "@capi-ts/sdk";
import { it } from "vitest";
import { startApiServer } from "../../src/index.js";
import { GadgetResource, gadget, gadgetCrd } from "./support.js";

it("debug", async () => {
  const api = await startApiServer({ crds: [gadgetCrd] });
  const manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "x",
    logger: { level: "silent" },
  });
  manager
    .controller("gadgets")
    .for(GadgetResource)
    .complete(async (ctx: any) => {
      const obj = await manager.cache.get(GadgetResource, ctx.request ?? ctx);
      if (!obj) return undefined;
      if ((obj as any).status?.observedSize !== (obj as any).spec.size) {
        await manager.client.mergePatchStatus(GadgetResource, obj, {
          status: { observedSize: (obj as any).spec.size },
        });
      }
      return undefined;
    });
  void manager.start();
  await manager.elected();
  for (let start = 0; start < 300; start += 100)
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        manager.client.create(GadgetResource, gadget(`g-${start + i}`, (start + i) % 7)),
      ),
    );
  await new Promise((r) => setTimeout(r, 15000));
  const gs = await manager.cache.list(GadgetResource);
  console.log(gs.map((g: any) => JSON.stringify(g.status)));
  console.log(
    api
      .requests()
      .filter((r) => r.resource === "gadgets")
      .map(
        (r) =>
          `${r.verb} ${r.subresource ?? ""} ${r.name ?? ""} ${r.status} ${r.query.watch ?? ""} ${JSON.stringify(r.query)}`,
      )
      .join("\n"),
  );
  await manager.stop();
  await api.stop();
}, 60000);
