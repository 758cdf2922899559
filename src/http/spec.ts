// The contract, loaded once: the raw text (served at /openapi.yaml), the parsed document, and the
// copy openapi-backend validates with. That copy has the discriminator mappings removed, because
// ajv's discriminator support rejects `mapping`, which openapi-typescript wants in the source.
import fs from 'node:fs';
import yaml from 'js-yaml';
import { specPath } from '../paths';

export interface LoadedSpec {
  text: string;
  document: Record<string, unknown>;
  forValidation: Record<string, unknown>;
}

function withoutDiscriminatorMappings(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutDiscriminatorMappings);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'discriminator' && value && typeof value === 'object') {
      out[key] = { propertyName: (value as { propertyName: string }).propertyName };
    } else out[key] = withoutDiscriminatorMappings(value);
  }
  return out;
}

let cached: LoadedSpec | undefined;

export function loadSpec(): LoadedSpec {
  if (!cached) {
    const text = fs.readFileSync(specPath, 'utf8');
    const document = yaml.load(text) as Record<string, unknown>;
    cached = { text, document, forValidation: withoutDiscriminatorMappings(document) as Record<string, unknown> };
  }
  return cached;
}
