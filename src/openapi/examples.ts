// Example values shared by the routes' docs: one license seen from every endpoint, so the
// examples of /docs tell one consistent story. (Tokens signed with a throwaway key.)

export const EXAMPLE = {
  licenseKey: '3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d',
  firmaId: 'Xq3vR8kLm2Pa',
  organizationName: 'Örnek Eczane Ltd.',
  password: 'Gizli-Parola-2025',
  expiryDate: '2026-12-31T23:59:59.000Z',
  tokenId: '8d1c0f5e-2b7a-4c39-9e64-0a5b3f7d2c18',
  accessToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsxIn0.eyJmaXJtYV9pZCI6IlhxM3ZSOGtMbTJQYSIsImlhdCI6MTc2NDA3NTYwMCwiZXhwIjoxNzY0MDc2NTAwLCJ0eXAiOiJhY2Nlc3MiLCJnZW4iOjAsImlzcyI6ImxpY2Vuc2Utc2VydmljZSJ9.Wmm8rWy3YKC3NnTSJww3XfO8k9QR8nyS0VeoucgEZf4',
  signToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsxIn0.eyJmaXJtYV9pZCI6IlhxM3ZSOGtMbTJQYSIsImZpcm1hX2FkaSI6IsOWcm5layBFY3phbmUgTHRkLiIsInRva2VuX2lkIjoiOGQxYzBmNWUtMmI3YS00YzM5LTllNjQtMGE1YjNmN2QyYzE4IiwiaW16YV90aXBpIjowLCJpYXQiOjE3NjQwNzU2MDAsImV4cCI6MTc2NDA3NTkwMCwidHlwIjoic2lnbiIsImlzcyI6ImxpY2Vuc2Utc2VydmljZSJ9.xgR75Zux3J0MCFg1dshPaOJtR3Xpo-47O_1ZpdXpK6Q',
  totalQuota: 100,
  usedQuota: 13,
  domains: ['eczane.ornek.com.tr', '*.ornek.com.tr'],
  /** when the examples happen: the timestamp of every example answer that carries one, so that every process and every start serve the same document (and ETag) */
  now: '2026-03-01T09:30:00.000Z',
} as const;
