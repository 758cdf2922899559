// The time app.
import { objectOf, tool, type AppModule } from '../types';

export const timeApp: AppModule = {
  slug: 'time',
  name: 'Time',
  description: 'The current time.',
  tools: [tool('time.now', 'Now', 'Returns the current time as ISO 8601.', 'read', objectOf({}), async () => ({ now: new Date().toISOString() }))],
};
