import { Type, type TSchema } from '@sinclair/typebox';
import { Id, Obj, Str } from '../../http/schemas.js';

/** A string or null (null clears the field), bounded. Plain JSON-schema union so Ajv names the field. */
export function NStr(max: number) {
  return Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: max });
}

export function Enum<T extends string>(values: readonly T[]) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values] });
}

const opt = <T extends TSchema>(t: T) => Type.Optional(t);

const CMD = 2048;

/** The flat project fields (seed Project table plus contract section 5's additions). */
function projectFields() {
  return {
    gitOwner: opt(NStr(100)),
    gitRepo: opt(NStr(100)),
    gitBranch: opt(NStr(255)),
    framework: opt(NStr(64)),
    buildCommand: opt(NStr(CMD)),
    gitProvider: opt(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 32, pattern: '^[A-Za-z][A-Za-z0-9_-]*$|^$' })),
    installCommand: opt(NStr(CMD)),
    startCommand: opt(NStr(CMD)),
    outputDirectory: opt(NStr(512)),
    rootDirectory: opt(NStr(512)),
    port: opt(Type.Integer({ minimum: 1, maximum: 65535 })),
    packageManager: opt(NStr(32)),
    runtime: opt(NStr(32)),
    dockerfile: opt(NStr(512)),
    httpsRedirect: opt(Type.Union([Type.Boolean(), Type.Null()])),
    hsts: opt(Type.Union([Type.Boolean(), Type.Null()])),
    healthPath: opt(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 512, pattern: '^(/[^\\s]*)?$' })),
    autoRollback: opt(Type.Union([Type.Boolean(), Type.Null()])),
    static: opt(
      Type.Union([
        Obj({ outputDirectory: opt(NStr(512)), spa: opt(Type.Union([Type.Boolean(), Type.Null()])), cleanUrls: opt(Type.Union([Type.Boolean(), Type.Null()])) }),
        Type.Null(),
      ]),
    ),
  };
}

export const CreateBody = Obj({ name: Str({ min: 1, max: 100 }), ...projectFields() });
export const UpdateBody = Obj({ name: opt(Str({ min: 1, max: 100 })), ...projectFields() });
export const EnsureBody = Obj({ name: opt(Str({ min: 1, max: 100 })), projectId: opt(Id), sessionId: opt(Id), ...projectFields() });

export const ProjectParams = Obj({ id: Id });
export const RuleParams = Obj({ id: Id, ruleId: Id });

export const EnvironmentBody = Obj({ name: Str({ min: 1, max: 63 }), branch: opt(Str({ max: 255 })) });

export const OptionsBody = Obj({
  installCommand: opt(NStr(CMD)),
  buildCommand: opt(NStr(CMD)),
  startCommand: opt(NStr(CMD)),
  outputDirectory: opt(NStr(512)),
  rootDirectory: opt(NStr(512)),
  nodeVersion: opt(NStr(32)),
});

export const EnvQuery = Obj({ environment: opt(Str({ min: 1, max: 63 })) });

export const EnvPatchBody = Obj({
  environment: opt(Str({ min: 1, max: 63 })),
  upserts: opt(
    Type.Array(Obj({ key: Str({ min: 1, max: 256 }), value: Type.String({ maxLength: 65536 }), isSecret: opt(Type.Boolean()) }), { maxItems: 1000 }),
  ),
  deletes: opt(Type.Array(Str({ min: 1, max: 256 }), { maxItems: 1000 })),
});

export const CloneTokenBody = Obj({ token: Str({ min: 1, max: 4096 }), username: opt(Str({ max: 256 })) });

export const LinkBody = Obj({ owner: Str({ min: 1, max: 100 }), repo: Str({ min: 1, max: 100 }), branch: opt(Str({ max: 255 })) });

export const AutoDeployBody = Obj({ enabled: Type.Boolean() });
export const WebhookDomainBody = Obj({ domain: Str({ max: 260 }) });
export const BranchBody = Obj({ branch: Str({ min: 1, max: 255 }) });
export const DomainBody = Obj({ domain: Str({ min: 1, max: 260 }) });

export const SLEEP_MODES = ['auto_sleep', 'always_on'] as const;
export const SleepModeBody = Obj({ sleepMode: Enum(SLEEP_MODES) });

const Limits = Obj({
  cpuCores: opt(Type.Number({ exclusiveMinimum: 0, maximum: 4 })),
  memoryMb: opt(Type.Integer({ minimum: 64, maximum: 65536 })),
  diskMb: opt(Type.Integer({ minimum: 128, maximum: 16_777_216 })),
});

/** Production adds `replicas`: Swarm services run that many tasks (contract section 13). */
const ProductionLimits = Obj({
  cpuCores: opt(Type.Number({ exclusiveMinimum: 0, maximum: 4 })),
  memoryMb: opt(Type.Integer({ minimum: 64, maximum: 65536 })),
  diskMb: opt(Type.Integer({ minimum: 128, maximum: 16_777_216 })),
  replicas: opt(Type.Integer({ minimum: 1, maximum: 20 })),
});

export const ResourcesBody = Obj({
  production: opt(ProductionLimits),
  build: opt(Limits),
  sleepMode: opt(Enum(SLEEP_MODES)),
  port: opt(Type.Integer({ minimum: 1, maximum: 65535 })),
});


const RANGES = Type.Array(Str({ min: 1, max: 64 }), { maxItems: 1000 });

function ruleFields() {
  return {
    enabled: opt(Type.Boolean()),
    path: opt(NStr(512)),
    limit: opt(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    windowSeconds: opt(Type.Integer({ minimum: 1, maximum: 86_400 })),
    ips: opt(RANGES),
    expiresAt: opt(NStr(64)),
    action: opt(Enum(['allow', 'deny'] as const)),
    cidrs: opt(RANGES),
  };
}

export const RULE_KIND_VALUES = ['rate-limit', 'ban', 'allow-deny'] as const;
export const RuleCreateBody = Obj({ kind: Enum(RULE_KIND_VALUES), ...ruleFields() });
export const RulePatchBody = Obj({ kind: opt(Enum(RULE_KIND_VALUES)), ...ruleFields() });
