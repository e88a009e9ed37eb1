/** The verification mail: a single link, valid for a day, and nothing else a phisher could imitate usefully. */
export function verificationMail(to: string, publicBaseUrl: string, token: string, ttlMs: number) {
  const hours = Math.round(ttlMs / 3_600_000);
  const link = `${publicBaseUrl}/verify-email?token=${encodeURIComponent(token)}`;
  return {
    to,
    subject: 'Confirm your email address for Ark',
    text: [
      'Welcome to Ark.',
      '',
      `Confirm your email address by opening this link within ${hours} hours:`,
      '',
      link,
      '',
      'If you did not sign up, ignore this message: nothing happens without the link.',
      '',
    ].join('\n'),
  };
}
