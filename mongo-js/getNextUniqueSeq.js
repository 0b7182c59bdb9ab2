function (keyName, clientMicros) {
  // idmint's cyclic sequence: the next value of counter keyName, as
  // getNextUniqueStamp (stored beside this function) takes it. A value alone
  // repeats after the counter wraps: an ID written from it needs the
  // timestamp issued with it, which getNextUniqueStamp returns too; do not
  // pair it with a clock of your own, which may be frozen or behind. A
  // striped counter's value comes from one of its lanes, as
  // getNextUniqueStamp says.
  return getNextUniqueStamp(keyName, clientMicros).val;
}
