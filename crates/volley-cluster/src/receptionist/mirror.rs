pub(crate) fn _todo() {}
