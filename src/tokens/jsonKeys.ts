// Repeated member names in a JSON text: the client SDK's module, so that the server's tokens
// and the SDK's offline verification refuse exactly the same texts.
export { hasUniqueMembers, membersInText, uniqueObjectOf } from '@license-service/client/members';
