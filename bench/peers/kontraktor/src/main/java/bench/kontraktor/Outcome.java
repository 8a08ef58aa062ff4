package bench.kontraktor;

/**
 * One run: what the client saw (answers and their sum; for tell, what it
 * sent) and what the server counted. Verified when both sides have every
 * message and the expected sum.
 */
record Outcome(String test, long messages, long elapsedNs, long inFlight,
               long clientCount, long wrong, long clientSum,
               long serverCount, long serverSum) {

    long expectedSum() {
        return Client.expectedSum(messages);
    }

    boolean verified() {
        return wrong == 0 && clientCount == messages && clientSum == expectedSum()
                && serverCount == messages && serverSum == expectedSum();
    }

    String json() {
        double perS = messages * 1e9 / elapsedNs;
        return "{\"scenario\":\"kontraktor\",\"system\":\"kontraktor\",\"test\":\"" + test
                + "\",\"messages\":" + messages + ",\"elapsed_ns\":" + elapsedNs
                + ",\"msgs_per_s\":" + perS
                + ",\"in_flight\":" + (inFlight < 0 ? "null" : String.valueOf(inFlight))
                + ",\"client_count\":" + clientCount + ",\"wrong\":" + wrong
                + ",\"client_sum\":" + clientSum + ",\"server_count\":" + serverCount
                + ",\"server_sum\":" + serverSum + ",\"expected_sum\":" + expectedSum()
                + ",\"verified\":" + verified() + "}";
    }
}
