// The models a workspace can use: the built-in scripted model, plus an OpenAI-compatible
// provider's models when one is configured.
import type { Config } from '../../config';
import type { CatalogModel } from '../../domain/types';
import { openAiProvider } from './openai';
import type { ModelProvider } from './provider';
import { scriptedProvider } from './scripted';

export interface ModelRegistry {
  catalog: CatalogModel[];
  providerFor(modelId: string): ModelProvider | undefined;
}

export function createModelRegistry(config: Pick<Config, 'openai'>): ModelRegistry {
  const providers = [scriptedProvider, ...(config.openai ? [openAiProvider(config.openai)] : [])];
  const byModel = new Map(providers.flatMap((p) => p.models.map((m) => [m.id, p] as const)));
  return {
    catalog: providers.flatMap((p) => p.models),
    providerFor: (modelId) => byModel.get(modelId),
  };
}
