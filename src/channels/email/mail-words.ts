// The service's own words in an agent's mail (issue 47; the agent's `email.locale`): what stands in
// for a missing subject, and the footer saying an AI agent wrote the message. The agent's own text
// is its own; only these few words are the service's, so they speak the agent's language.

export interface MailWords {
  /** The subject of a mail that has none. */
  noSubject: string;
  /** The last line of every mail an agent sends. */
  agentFooter: string;
}

const ENGLISH: MailWords = { noSubject: '(no subject)', agentFooter: 'This message was written by an AI agent.' };

// A Map, not an object: a locale named `constructor` must not find Object's.
const WORDS = new Map<string, MailWords>(
  Object.entries({
    en: ENGLISH,
    de: { noSubject: '(kein Betreff)', agentFooter: 'Diese Nachricht wurde von einem KI-Agenten geschrieben.' },
    fr: { noSubject: '(sans objet)', agentFooter: 'Ce message a été rédigé par un agent IA.' },
    es: { noSubject: '(sin asunto)', agentFooter: 'Este mensaje fue escrito por un agente de IA.' },
    it: { noSubject: '(nessun oggetto)', agentFooter: 'Questo messaggio è stato scritto da un agente IA.' },
    pt: { noSubject: '(sem assunto)', agentFooter: 'Esta mensagem foi escrita por um agente de IA.' },
    nl: { noSubject: '(geen onderwerp)', agentFooter: 'Dit bericht is geschreven door een AI-agent.' },
  }),
);

/** The languages with words of their own; any other locale gets English. */
export const MAIL_LANGUAGES: readonly string[] = [...WORDS.keys()];

/** The words for a locale (`de`, `de-CH`, `pt_BR`): the locale itself, then its language, then English. */
export function wordsFor(locale: string): MailWords {
  // A locale tag is short (BCP 47 keeps 35 characters); the rest of a longer one is no locale.
  const tag = locale.trim().slice(0, 35).toLowerCase().replaceAll('_', '-');
  return WORDS.get(tag) ?? WORDS.get(tag.split('-')[0]!) ?? ENGLISH;
}
