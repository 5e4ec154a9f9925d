/**
 * The AWS reference provider's test bed: a moto server, the AWS SDK clients the provider gets, the
 * stand-ins for what moto lacks, and a kubelet stand-in that follows the instances moto reports.
 *
 * ## What moto 5.2 lacks, and how the test bed stands in (never the driver)
 *
 * Checked against the version `./dev moto` pins; docs/guides/aws-reference-provider.md lists them.
 * Each stand-in is client middleware on the provider's SDK clients, at the `initialize` step, so
 * the driver sends and parses exactly what it would against AWS:
 *
 * - `DeleteLaunchTemplateVersions` is not implemented (HTTP 500): answered here, with AWS's
 *   per-version results (`launchTemplateVersionIsDefault` for the default version,
 *   `launchTemplateVersionDoesNotExist` for a missing one); deleted versions are hidden from
 *   `DescribeLaunchTemplateVersions` from then on.
 * - A version made by `CreateLaunchTemplateVersion` keeps its `UserData` undecoded, and every launch
 *   from it fails (an assertion in moto, HTTP 500): the test bed sends the version without
 *   `UserData`, keeps it, and puts it back into what `DescribeLaunchTemplateVersions` and the kubelet
 *   stand-in see.
 * - Every instance of a group is reported at the template's current default version (and EC2 tags it
 *   `aws:ec2launchtemplate:version` with it), whatever version launched it: the test bed notes the
 *   group's version when an instance first appears (moto launches only inside a call, so after each
 *   call that may launch) and reports that.
 * - A second `CreateAutoScalingGroup` for an existing name replaces the group silently (AWS answers
 *   `AlreadyExists`): refused here as AWS does.
 * - `TerminateInstanceInAutoScalingGroup` of an instance no group has fails with HTTP 500 (AWS
 *   answers a `ValidationError`, "Instance Id not found"): answered here as AWS does.
 * - `DescribeLaunchTemplateVersions` without `MaxResults` stops at 15 versions with no `NextToken`:
 *   not stood in; the driver asks for pages of 200, as it should against AWS anyway.
 * - `StartInstanceRefresh` is not implemented: not stood in; the driver uses the kit's rollouts.
 * - No pending or terminating lifecycle: instances are `InService` at once and gone at once. Not
 *   stood in: the kubelet stand-in's join delay plays the boot; a cloud that is faster than AWS
 *   exercises no less of the kit.
 * - No throttling: the `throttle` actor fails the provider's next calls with AWS's `Throttling`
 *   error, before the SDK's own retry step (else a retry would hide it).
 *
 * @module
 */
import { gunzipSync } from "node:zlib";
import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  type Instance as GroupInstance,
  paginateDescribeAutoScalingGroups,
  SetDesiredCapacityCommand,
} from "@aws-sdk/client-auto-scaling";
import {
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  EC2Client,
  type LaunchTemplateVersion,
  TerminateInstancesCommand,
} from "@aws-sdk/client-ec2";
import { registerSecret } from "@capi-ts/sdk/runtime";
import type { KubeletStandIn } from "@capi-ts/testing";
import type {
  InitializeHandler,
  InitializeHandlerArguments,
  InitializeHandlerOutput,
  InitializeMiddleware,
} from "@smithy/types";
import { type AwsClients, awsProviderId } from "./driver.js";
import { type MotoServer, startMoto } from "./moto.js";

/** User data as an instance's cloud-init reads it: base64, then gunzipped when it is gzip. */
function decodeUserData(base64: string): string {
  const bytes = Buffer.from(base64, "base64");
  return (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString("utf8");
}

/** The region of the test bed. */
export const MOTO_REGION = "us-east-1";

/** moto takes any keys; they are still treated as secrets, as a provider treats real ones. */
const CREDENTIALS = {
  accessKeyId: "AKIAMOTOTESTBED00001",
  secretAccessKey: "moto-test-bed-secret-access-key-0001",
};

/** One call of the provider's clients, as the suite counts them. */
export interface AwsCall {
  /** The command, e.g. `UpdateAutoScalingGroupCommand`. */
  readonly command: string;
  /** Whether it changes something (anything but `Describe…`). */
  readonly mutating: boolean;
  /** Whether it sets a group's desired size. */
  readonly resizes: boolean;
}

/** Where an instance came from, as moto cannot say. */
interface Launch {
  readonly group: string;
  readonly templateId: string;
  readonly version: string;
}

/** An instance of a group, as the test bed sees it (with the stand-ins applied). */
export interface MotoInstance {
  /** Instance ID. */
  readonly id: string;
  /** The group it belongs to. */
  readonly group: string;
  /** Its zone. */
  readonly zone: string;
  /** `aws:///<zone>/<id>`. */
  readonly providerID: string;
  /** The template version it launched from, when the test bed saw it launch. */
  readonly version: string | undefined;
}

type Input = Record<string, unknown>;
type Output = Record<string, unknown> & { $metadata?: unknown };

/** The error AWS answers, as the SDK surfaces it (name, `$metadata`, `$fault`). */
function awsError(name: string, message: string, status = 400): Error {
  return Object.assign(new Error(message), {
    name,
    $fault: "client" as const,
    $metadata: { httpStatusCode: status },
  });
}

/**
 * A moto server with the AWS provider's stand-ins: start one per test run with
 * {@link startMotoTestBed}.
 */
export class MotoTestBed {
  /** The server. */
  readonly moto: MotoServer;
  /** The test bed's own clients: the truth, read past the stand-ins' counters and faults. */
  readonly inspect: AwsClients;
  readonly #calls: AwsCall[] = [];
  #failedCalls = 0;
  #throttleLeft = 0;
  readonly #launches = new Map<string, Launch>();
  /** UserData of versions moto cannot keep, by `<templateId>#<version>`. */
  readonly #userData = new Map<string, string>();
  /** Deleted versions by template ID. */
  readonly #deleted = new Map<string, Set<string>>();

  constructor(moto: MotoServer) {
    this.moto = moto;
    this.inspect = {
      ec2: new EC2Client(this.#config()),
      autoScaling: new AutoScalingClient(this.#config()),
    };
  }

  #config() {
    return {
      endpoint: this.moto.endpoint,
      region: MOTO_REGION,
      credentials: CREDENTIALS,
      // Retries are the kit's (see asgDriver).
      maxAttempts: 1,
    };
  }

  /** Calls of the provider's clients so far. */
  get calls(): readonly AwsCall[] {
    return this.#calls;
  }

  /** How many of the provider's calls failed: throttled here, or refused by moto. */
  get failedCalls(): number {
    return this.#failedCalls;
  }

  /** Fails the provider's next `calls` calls with AWS's `Throttling` error. */
  throttle(calls: number): void {
    this.#throttleLeft += calls;
  }

  /**
   * New SDK clients for the provider, with the stand-ins, call counting and the throttle fault.
   *
   * @example
   * ```ts
   * const driver = asgDriver(bed.providerClients(), { defaultZones: ["us-east-1a"] });
   * ```
   */
  providerClients(): AwsClients {
    const ec2 = new EC2Client(this.#config());
    const autoScaling = new AutoScalingClient(this.#config());
    const standIns =
      <I extends object, O extends object>(): InitializeMiddleware<I, O> =>
      (next, context) =>
      async (args) => {
        const command = context.commandName ?? "unknown";
        this.#count(command, args.input as Input);
        try {
          return await this.#send(command, args, next);
        } catch (error) {
          this.#failedCalls++;
          throw error;
        }
      };
    const options = { step: "initialize", name: "motoStandIns", priority: "high" } as const;
    ec2.middlewareStack.add(standIns(), options);
    autoScaling.middlewareStack.add(standIns(), options);
    return { ec2, autoScaling };
  }

  /** One call of the provider's clients: the throttle fault, the stand-ins, then moto. */
  async #send<I extends object, O extends object>(
    command: string,
    args: InitializeHandlerArguments<I>,
    next: InitializeHandler<I, O>,
  ): Promise<InitializeHandlerOutput<O>> {
    let input = args.input as Input;
    if (this.#throttleLeft > 0) {
      this.#throttleLeft--;
      throw awsError("Throttling", "Rate exceeded");
    }
    const early = await this.#before(command, input);
    if (early) return { output: early as never, response: undefined };
    // A version's UserData is kept aside and put back once moto answered (module notes).
    const data = input.LaunchTemplateData as Input | undefined;
    const userData =
      command === "CreateLaunchTemplateVersionCommand" && typeof data?.UserData === "string"
        ? data.UserData
        : undefined;
    if (userData !== undefined) {
      const { UserData: _kept, ...rest } = data ?? {};
      input = { ...input, LaunchTemplateData: rest };
    }
    const result = await next({ ...args, input: input as never });
    await this.#after(command, args.input as Input, result.output as Output, userData);
    return result;
  }

  #count(command: string, input: Input): void {
    const mutating = !command.startsWith("Describe");
    const resizes =
      command === "SetDesiredCapacityCommand" ||
      (command === "UpdateAutoScalingGroupCommand" && input.DesiredCapacity !== undefined);
    this.#calls.push({ command, mutating, resizes });
  }

  async #before(command: string, input: Input): Promise<Output | undefined> {
    switch (command) {
      case "CreateAutoScalingGroupCommand": {
        const name = String(input.AutoScalingGroupName);
        if (await this.#group(name)) {
          throw awsError(
            "AlreadyExistsFault",
            `AutoScalingGroup by this name already exists - A group with the name ${name} already exists`,
          );
        }
        return undefined;
      }
      case "DeleteLaunchTemplateVersionsCommand":
        return await this.#deleteVersions(input);
      case "TerminateInstanceInAutoScalingGroupCommand": {
        const id = String(input.InstanceId);
        const { AutoScalingInstances = [] } = await this.inspect.autoScaling.send(
          new DescribeAutoScalingInstancesCommand({ InstanceIds: [id] }),
        );
        if (AutoScalingInstances.length === 0) {
          throw awsError(
            "ValidationError",
            `Instance Id not found - No managed instance found for instance ID: ${id}`,
          );
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }

  async #after(
    command: string,
    input: Input,
    output: Output,
    userData: string | undefined,
  ): Promise<void> {
    switch (command) {
      case "CreateLaunchTemplateCommand": {
        const template = output.LaunchTemplate as Input | undefined;
        const data = input.LaunchTemplateData as Input | undefined;
        if (template && typeof data?.UserData === "string") {
          this.#userData.set(`${template.LaunchTemplateId}#1`, data.UserData);
        }
        return;
      }
      case "CreateLaunchTemplateVersionCommand": {
        const version = output.LaunchTemplateVersion as LaunchTemplateVersion | undefined;
        if (version && userData !== undefined) {
          this.#userData.set(`${version.LaunchTemplateId}#${version.VersionNumber}`, userData);
          if (version.LaunchTemplateData) version.LaunchTemplateData.UserData = userData;
        }
        return;
      }
      case "DescribeLaunchTemplateVersionsCommand": {
        const versions = (output.LaunchTemplateVersions ?? []) as LaunchTemplateVersion[];
        output.LaunchTemplateVersions = versions
          .filter((v) => !this.#isDeleted(v.LaunchTemplateId, v.VersionNumber))
          .map((v) => this.#withUserData(v));
        return;
      }
      case "DeleteLaunchTemplateCommand": {
        const template = output.LaunchTemplate as Input | undefined;
        if (template) this.#deleted.delete(String(template.LaunchTemplateId));
        return;
      }
      case "DescribeAutoScalingGroupsCommand": {
        for (const group of (output.AutoScalingGroups ?? []) as {
          Instances?: GroupInstance[];
        }[]) {
          for (const instance of group.Instances ?? []) {
            const launch = this.#launches.get(instance.InstanceId ?? "");
            if (launch && instance.LaunchTemplate) instance.LaunchTemplate.Version = launch.version;
          }
        }
        return;
      }
      case "CreateAutoScalingGroupCommand":
      case "UpdateAutoScalingGroupCommand":
      case "SetDesiredCapacityCommand":
      case "TerminateInstanceInAutoScalingGroupCommand":
        await this.noteLaunches();
        return;
      default:
        return;
    }
  }

  #isDeleted(templateId: string | undefined, version: number | undefined): boolean {
    return this.#deleted.get(templateId ?? "")?.has(String(version)) ?? false;
  }

  #withUserData(version: LaunchTemplateVersion): LaunchTemplateVersion {
    const kept = this.#userData.get(`${version.LaunchTemplateId}#${version.VersionNumber}`);
    if (kept === undefined || !version.LaunchTemplateData || version.LaunchTemplateData.UserData) {
      return version;
    }
    return { ...version, LaunchTemplateData: { ...version.LaunchTemplateData, UserData: kept } };
  }

  /** `DeleteLaunchTemplateVersions` as AWS answers it: per-version results, the default refused. */
  async #deleteVersions(input: Input): Promise<Output> {
    const { LaunchTemplates } = await this.inspect.ec2.send(
      new DescribeLaunchTemplatesCommand(
        input.LaunchTemplateId
          ? { LaunchTemplateIds: [String(input.LaunchTemplateId)] }
          : { LaunchTemplateNames: [String(input.LaunchTemplateName)] },
      ),
    );
    const template = LaunchTemplates?.[0];
    const id = template?.LaunchTemplateId ?? "";
    const existing = new Set((await this.#versions(id)).map((v) => String(v.VersionNumber)));
    const deleted = this.#deleted.get(id) ?? new Set<string>();
    this.#deleted.set(id, deleted);
    const ok: Input[] = [];
    const failed: Input[] = [];
    for (const version of (input.Versions ?? []) as string[]) {
      const base = {
        LaunchTemplateId: id,
        LaunchTemplateName: template?.LaunchTemplateName,
        VersionNumber: Number(version),
      };
      if (!existing.has(version) || deleted.has(version)) {
        failed.push({
          ...base,
          ResponseError: {
            Code: "launchTemplateVersionDoesNotExist",
            Message: "The specified launch template version does not exist.",
          },
        });
      } else if (String(template?.DefaultVersionNumber) === version) {
        failed.push({
          ...base,
          ResponseError: {
            Code: "launchTemplateVersionIsDefault",
            Message: "Cannot delete the default version of a launch template.",
          },
        });
      } else {
        deleted.add(version);
        ok.push(base);
      }
    }
    return {
      $metadata: { httpStatusCode: 200 },
      SuccessfullyDeletedLaunchTemplateVersions: ok,
      UnsuccessfullyDeletedLaunchTemplateVersions: failed,
    };
  }

  async #versions(templateId: string): Promise<LaunchTemplateVersion[]> {
    if (!templateId) return [];
    const { LaunchTemplateVersions = [] } = await this.inspect.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: templateId, MaxResults: 200 }),
    );
    return LaunchTemplateVersions;
  }

  async #group(name: string) {
    const { AutoScalingGroups } = await this.inspect.autoScaling.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [name] }),
    );
    return AutoScalingGroups?.[0];
  }

  /**
   * Notes the version each new instance launched from: the group's, at the time it first appears.
   * moto launches only inside a call, so running this after each call that may launch is exact.
   */
  async noteLaunches(): Promise<void> {
    for await (const page of paginateDescribeAutoScalingGroups(
      { client: this.inspect.autoScaling },
      {},
    )) {
      for (const group of page.AutoScalingGroups ?? []) {
        const version = group.LaunchTemplate?.Version;
        const templateId = group.LaunchTemplate?.LaunchTemplateId;
        if (version === undefined || templateId === undefined) continue;
        for (const instance of group.Instances ?? []) {
          const id = instance.InstanceId;
          if (id && !this.#launches.has(id)) {
            this.#launches.set(id, {
              group: group.AutoScalingGroupName ?? "",
              templateId,
              version,
            });
          }
        }
      }
    }
  }

  /** The live (not terminated) instances of a group, or of every group, from EC2. */
  async instances(group?: string): Promise<MotoInstance[]> {
    const { Reservations = [] } = await this.inspect.ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: "instance-state-name", Values: ["pending", "running", "stopping", "stopped"] },
          ...(group ? [{ Name: "tag:aws:autoscaling:groupName", Values: [group] }] : []),
        ],
      }),
    );
    return Reservations.flatMap((r) => r.Instances ?? []).flatMap((i) => {
      const id = i.InstanceId;
      const zone = i.Placement?.AvailabilityZone ?? "";
      const owner = i.Tags?.find((t) => t.Key === "aws:autoscaling:groupName")?.Value ?? "";
      if (!id || !owner) return [];
      return [
        {
          id,
          group: owner,
          zone,
          providerID: awsProviderId(zone, id),
          version: this.#launches.get(id)?.version,
        },
      ];
    });
  }

  /** The bootstrap data an instance booted with, as the test bed noted it. */
  async userData(instanceId: string): Promise<string | undefined> {
    const launch = this.#launches.get(instanceId);
    if (!launch) return undefined;
    const kept = this.#userData.get(`${launch.templateId}#${launch.version}`);
    if (kept !== undefined) return decodeUserData(kept);
    const [version] = (await this.#versions(launch.templateId)).filter(
      (v) => String(v.VersionNumber) === launch.version,
    );
    const data = version?.LaunchTemplateData?.UserData;
    return data === undefined ? undefined : decodeUserData(data);
  }

  /** The newest version of a launch template that is not deleted, `undefined` without the template. */
  async template(name: string): Promise<{ id: string; latest: number } | undefined> {
    try {
      const { LaunchTemplates } = await this.inspect.ec2.send(
        new DescribeLaunchTemplatesCommand({ LaunchTemplateNames: [name] }),
      );
      const t = LaunchTemplates?.[0];
      return t?.LaunchTemplateId
        ? { id: t.LaunchTemplateId, latest: t.LatestVersionNumber ?? 0 }
        : undefined;
    } catch (error) {
      if (error instanceof Error && error.name.startsWith("InvalidLaunchTemplateName"))
        return undefined;
      throw error;
    }
  }

  /** A group's bounds and desired size, `undefined` without the group. */
  async group(name: string): Promise<{ min?: number; max?: number; desired?: number } | undefined> {
    const group = await this.#group(name);
    return group && { min: group.MinSize, max: group.MaxSize, desired: group.DesiredCapacity };
  }

  /** Actor: an autoscaler sets the group's desired size. */
  async setDesiredCapacity(group: string, desired: number): Promise<void> {
    await this.inspect.autoScaling.send(
      new SetDesiredCapacityCommand({
        AutoScalingGroupName: group,
        DesiredCapacity: desired,
        HonorCooldown: false,
      }),
    );
    await this.noteLaunches();
  }

  /**
   * Actor: a user terminates an instance in EC2. The group replaces it, as on AWS (its health
   * check sees it gone).
   */
  async terminateInstance(instanceId: string): Promise<void> {
    await this.inspect.ec2.send(new TerminateInstancesCommand({ InstanceIds: [instanceId] }));
    await this.noteLaunches();
  }

  /** Stops moto. */
  async stop(): Promise<void> {
    this.inspect.ec2.destroy();
    this.inspect.autoScaling.destroy();
    await this.moto.stop();
  }
}

/**
 * Starts moto and its test bed.
 *
 * @example
 * ```ts
 * const bed = await startMotoTestBed();
 * const driver = asgDriver(bed.providerClients());
 * await bed.stop();
 * ```
 */
export async function startMotoTestBed(): Promise<MotoTestBed> {
  registerSecret(CREDENTIALS.secretAccessKey);
  registerSecret(CREDENTIALS.accessKeyId);
  return new MotoTestBed(await startMoto());
}

/** Options of {@link followMotoInstances}. */
export interface InstanceFollowerOptions {
  /** The test bed whose instances to follow. */
  readonly bed: MotoTestBed;
  /** Registers the Nodes (e.g. `kubeletStandIn({ kubeConfig: workloadKubeConfig })`, no delay). */
  readonly kubelet: KubeletStandIn;
  /** Whether an instance may join with the bootstrap data it booted with (the token check). */
  readonly canJoin?: (userData: string) => boolean | Promise<boolean>;
  /** Delay from an instance's first sight to its Node joining, ms. Default 0. */
  joinDelayMs?: number;
  /** How often moto is listed, ms. Default 100. */
  readonly pollMs?: number;
}

/** A running instance follower. */
export interface InstanceFollower {
  /** Sets the join delay of instances first seen from now on; `undefined` restores the default. */
  setJoinDelay(ms: number | undefined): void;
  /** Stops following (Nodes stay). */
  stop(): Promise<void>;
}

/**
 * A kubelet stand-in that follows moto: lists the instances moto reports, joins a Node for each new
 * one after the join delay (when its bootstrap token is valid at that time), and removes the Node of
 * each that is gone. `kubeletStandIn` of the testing package is push-only, so a cloud emulator that
 * cannot call out needs this poller; the testing package should offer one fed by a list function.
 *
 * @example
 * ```ts
 * const follower = followMotoInstances({ bed, kubelet: kubeletStandIn({ kubeConfig }), canJoin: env.isTokenValid });
 * ```
 */
export function followMotoInstances(options: InstanceFollowerOptions): InstanceFollower {
  const { bed, kubelet } = options;
  const defaultDelay = options.joinDelayMs ?? 0;
  let delay = defaultDelay;
  const seen = new Map<string, { joinAt: number; state: "waiting" | "joined" | "refused" }>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const tick = async (): Promise<void> => {
    // Launches the provider's calls did not note yet (an actor's, a replacement).
    await bed.noteLaunches();
    const live = await bed.instances();
    const now = Date.now();
    const liveIds = new Set(live.map((i) => i.id));
    for (const instance of live) {
      let entry = seen.get(instance.id);
      if (!entry) {
        entry = { joinAt: now + delay, state: "waiting" };
        seen.set(instance.id, entry);
      }
      if (entry.state !== "waiting" || now < entry.joinAt) continue;
      const userData = await bed.userData(instance.id);
      if (userData === undefined) continue; // not noted yet: the call that launched it is still returning
      if (!(await (options.canJoin?.(userData) ?? true))) {
        entry.state = "refused"; // as kubeadm: a stale token never joins
        continue;
      }
      await kubelet.join(instance.providerID, instance.id);
      entry.state = "joined";
    }
    for (const [id, entry] of seen) {
      if (liveIds.has(id)) continue;
      seen.delete(id);
      if (entry.state === "joined") await kubelet.remove(id);
    }
  };

  let running: Promise<void> = Promise.resolve();
  const loop = (): void => {
    if (stopped) return;
    running = tick()
      .catch(() => undefined) // moto restarting or a Node race: the next tick sees the truth again
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, options.pollMs ?? 100);
      });
  };
  loop();

  return {
    setJoinDelay(ms) {
      delay = ms ?? defaultDelay;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
