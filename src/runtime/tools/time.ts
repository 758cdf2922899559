// The time app.
import type { ToolImplementation } from './types';

export const timeTools: Record<string, ToolImplementation> = {
  'time.now': async () => ({ now: new Date().toISOString() }),
};
