# hash_churn.pl: perl builds a hash of N records (an array and a string each), then walks it,
# deleting about a third as it goes, and frees the rest at exit: the build, churn and teardown
# of an interpreter's heap. Prints a checksum line (the same under every allocator) and
# RESULT name=real_perl records=N.
# Usage: perl hash_churn.pl [N]
use strict;
use warnings;

my $n = shift // 250000;
my %h;
for my $i (1 .. $n) {
	$h{"k$i"} = [$i, "v" x ($i % 50), { id => $i }];
}
my ($sum, $deleted) = (0, 0);
for my $k (sort keys %h) {
	$sum += length($h{$k}[1]) + $h{$k}[2]{id};
	if ($sum % 3 == 0) {
		delete $h{$k};
		$deleted++;
	}
}
my $left = scalar keys %h;
print "checksum $sum deleted $deleted left $left\n";
print "RESULT name=real_perl records=$n\n";
