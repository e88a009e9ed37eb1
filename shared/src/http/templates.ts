import { type Static, Type } from '@sinclair/typebox';
import { ByteCount, DecimalString, ImageDigest, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PageQuery } from './common.js';

// The public template catalog (contract part 2 "Template", "TemplateFit"; part 4 "Catalog").

export const TemplateKind = Type.Union([Type.Literal('model'), Type.Literal('classical'), Type.Literal('custom')]);
export type TemplateKind = Static<typeof TemplateKind>;

/** GPU software stacks a template may ship a built image for. */
export const TemplateBackend = Type.Union([
  Type.Literal('cuda'),
  Type.Literal('rocm'),
  Type.Literal('sycl'),
  Type.Literal('vulkan'),
  Type.Literal('metal'),
]);
export type TemplateBackend = Static<typeof TemplateBackend>;

export const TEMPLATE_BACKENDS = ['cuda', 'rocm', 'sycl', 'vulkan', 'metal'] as const satisfies readonly TemplateBackend[];
export const TEMPLATE_KINDS = ['model', 'classical', 'custom'] as const satisfies readonly TemplateKind[];

/** Limits on an imported template, so one catalog entry can never bloat a job manifest. */
export const TEMPLATE_LIMITS = {
  nameMaxLength: 100,
  descriptionMaxLength: 2000,
  portsMax: 16,
  environmentMax: 64,
  environmentValueMaxLength: 4096,
  commandArgsMax: 64,
  commandArgMaxLength: 4096,
  importItemsMax: 1000,
} as const;

/** VRAM needed per device: every assigned device must have at least min_vram_bytes. */
export const TemplateVramFit = Type.Object(
  {
    min_vram_bytes: ByteCount,
    recommended_vram_bytes: Type.Optional(ByteCount),
  },
  { additionalProperties: false },
);
export type TemplateVramFit = Static<typeof TemplateVramFit>;

/** One built image of the template, pinned by digest. */
export const TemplateRuntime = Type.Object(
  {
    backend: TemplateBackend,
    image_digest: ImageDigest,
  },
  { additionalProperties: false },
);
export type TemplateRuntime = Static<typeof TemplateRuntime>;

export const PortNumber = Type.Integer({ minimum: 1, maximum: 65535 });

export const TemplatePort = Type.Object(
  {
    container_port: PortNumber,
    protocol: Type.Union([Type.Literal('http'), Type.Literal('https'), Type.Literal('tcp')]),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9-]*$' })),
  },
  { additionalProperties: false },
);
export type TemplatePort = Static<typeof TemplatePort>;

export const TemplateHealthCheck = Type.Object(
  {
    /** A container port declared in spec.ports. */
    port: PortNumber,
    /** HTTP path probed on that port; without it a TCP connect is the check. */
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 512, pattern: '^/[\\x21-\\x7e]*$' })),
  },
  { additionalProperties: false },
);
export type TemplateHealthCheck = Static<typeof TemplateHealthCheck>;

/** Model-kind templates run an OpenAI-compatible engine serving one model. */
export const TemplateEngine = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: "e.g. 'vllm', 'llama.cpp', 'openai-compatible'" }),
    model: Type.String({ minLength: 1, maxLength: 256 }),
    /** The container port the engine's OpenAI-compatible API listens on; declared in spec.ports. */
    api_port: PortNumber,
  },
  { additionalProperties: false },
);
export type TemplateEngine = Static<typeof TemplateEngine>;

export const TemplateSpec = Type.Object(
  {
    ports: Type.Array(TemplatePort, { maxItems: TEMPLATE_LIMITS.portsMax }),
    environment: Type.Record(
      Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }),
      Type.String({ maxLength: TEMPLATE_LIMITS.environmentValueMaxLength }),
      { maxProperties: TEMPLATE_LIMITS.environmentMax, additionalProperties: false },
    ),
    command: Type.Optional(
      Type.Array(Type.String({ maxLength: TEMPLATE_LIMITS.commandArgMaxLength }), {
        minItems: 1,
        maxItems: TEMPLATE_LIMITS.commandArgsMax,
      }),
    ),
    health_check: Type.Optional(TemplateHealthCheck),
    engine: Type.Optional(TemplateEngine),
  },
  { additionalProperties: false },
);
export type TemplateSpec = Static<typeof TemplateSpec>;

/** Contract part 2, Template: an item of the public catalog. */
export const Template = Type.Object(
  {
    template_id: Uuid,
    kind: TemplateKind,
    name: Type.String({ minLength: 1, maxLength: TEMPLATE_LIMITS.nameMaxLength }),
    description: Type.String({ maxLength: TEMPLATE_LIMITS.descriptionMaxLength }),
    vram_fit: TemplateVramFit,
    runtimes: Type.Array(TemplateRuntime, { minItems: 1, maxItems: 5 }),
    spec: TemplateSpec,
    /** The tier jobs on it run in (Job.tier): model-kind templates are community inference, the others containers. */
    tier: Type.Optional(Type.Union([Type.Literal('container'), Type.Literal('inference')])),
    /** Present on inference templates: what a renter must not send to the engine. */
    data_notice: Type.Optional(Type.String({ maxLength: 500 })),
    /** Bound to at least one admitted machine by a qualification record; public views only show published ones. */
    published: Type.Boolean(),
    created_at: Rfc3339Utc,
    updated_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type Template = Static<typeof Template>;

/**
 * Contract part 2, TemplateFit (the `fit` of an offer): the template's vram_fit against the smallest measured
 * device VRAM of the machine, since every assigned device must hold the template.
 */
export const TemplateFit = Type.Object(
  {
    template_id: Uuid,
    fits: Type.Boolean(),
    min_vram_bytes: ByteCount,
    recommended_vram_bytes: Type.Optional(ByteCount),
    /** Smallest measured VRAM across the machine's devices; null when the machine reports no device. */
    device_vram_bytes: Nullable(ByteCount),
    device_count: Type.Integer({ minimum: 0 }),
    /** device_vram_bytes - min_vram_bytes when it fits, else "0". */
    headroom_bytes: ByteCount,
    /** min_vram_bytes - device_vram_bytes (or min_vram_bytes without devices) when it does not fit, else "0". */
    shortfall_bytes: ByteCount,
    /** Present when the template names recommended_vram_bytes. */
    meets_recommended: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type TemplateFit = Static<typeof TemplateFit>;

/** GET /api/v1/templates query. */
export const TemplateListQuery = Type.Object(
  {
    ...PageQuery.properties,
    kind: Type.Optional(TemplateKind),
    /** A filter, not a size: any value is accepted (one past every stored size selects like the largest). */
    min_vram_bytes: Type.Optional(DecimalString),
    backend: Type.Optional(TemplateBackend),
  },
  { additionalProperties: false },
);
export type TemplateListQuery = Static<typeof TemplateListQuery>;

/**
 * One item of an operator import file. template_id is optional: without it the id is derived from the name,
 * so re-importing the same file always updates the same templates.
 */
export const TemplateImportItem = Type.Object(
  {
    template_id: Type.Optional(Uuid),
    kind: TemplateKind,
    name: Type.String({ minLength: 1, maxLength: TEMPLATE_LIMITS.nameMaxLength }),
    description: Type.String({ maxLength: TEMPLATE_LIMITS.descriptionMaxLength }),
    vram_fit: TemplateVramFit,
    runtimes: Type.Array(TemplateRuntime, { minItems: 1, maxItems: 5 }),
    spec: TemplateSpec,
  },
  { additionalProperties: false },
);
export type TemplateImportItem = Static<typeof TemplateImportItem>;

/** POST /api/v1/admin/templates/{id}/qualifications body. */
export const TemplateQualificationRequest = Type.Object(
  {
    machine_id: Uuid,
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type TemplateQualificationRequest = Static<typeof TemplateQualificationRequest>;

export const TemplateQualificationSource = Type.Union([Type.Literal('agent'), Type.Literal('admin')]);
export type TemplateQualificationSource = Static<typeof TemplateQualificationSource>;

/** A record binding a template to a machine that can run it. */
export const TemplateQualification = Type.Object(
  {
    template_id: Uuid,
    machine_id: Uuid,
    source: TemplateQualificationSource,
    qualified_at: Rfc3339Utc,
    published: Type.Boolean({ description: 'whether the template is now listed in the public catalog' }),
  },
  { additionalProperties: false },
);
export type TemplateQualification = Static<typeof TemplateQualification>;
