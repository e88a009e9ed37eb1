import nodemailer from 'nodemailer';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/** SMTP through nodemailer. `smtp://user:pass@host:port` or `smtps://...`. */
export function smtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport(url);
  return {
    async send(message) {
      await transport.sendMail({ from, ...message });
    },
  };
}

/** Without SMTP configured, mail goes to the log so a single-machine operator still sees links. */
export function logMailer(log: (line: string) => void): Mailer {
  return {
    async send(message) {
      log(`mail to ${message.to}: ${message.subject}\n${message.text}`);
    },
  };
}
